// Package cpuclock measures work by the CPU time a process spends, not by
// the wall clock, so that a test can check a cost model on a busy machine.
//
// A test that asks "did this finish in time?" fails whenever the machine is
// slower or busier than the one it was tuned on. The question such a test
// means is "is the work model honest?", and that is answered by the CPU time
// the work consumed, expressed in units of a fixed calibration loop measured
// in the same process (the loop BenchmarkMachineCalibration times): machines
// of one kind differ about 2x in speed, and the ratio of two CPU times on the
// same machine does not. docs/testing.md ("No test reads the wall clock")
// says how the suite uses it.
package cpuclock

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process returns the CPU time (user plus system) the whole process has
// consumed so far. Differences of two calls measure the CPU spent between
// them by every goroutine of the process: a test that uses it must be serial
// in its package (see docs/testing.md), so that the only work in the process
// is its own.
func Process() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("cpuclock: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// calibrationValues is the input of CalibrationOp: 300 numbers, made once.
var calibrationValues = func() [300]float64 {
	var v [300]float64
	for k := range v {
		v[k] = float64(k) * 1.1e-3
	}
	return v
}()

// CalibrationOp is one operation of the calibration loop: the sum of 300
// float64 values as a dependent chain kept in memory at acc (300
// floating-point additions, each waiting for the store of the one before).
// This is the operation BenchmarkMachineCalibration (internal/sanitize) has
// timed since it was written, where the benchmark loop kept the running sum
// in memory: on this project's 2-core machine kind it takes about 1.2 µs,
// and figures quoted against it in docs/performance.md stay comparable.
//
//go:noinline
func CalibrationOp(acc *float64) {
	for _, x := range &calibrationValues {
		*acc += x
	}
}

// Unit returns the CPU time of one CalibrationOp on this machine, now: the
// smallest of rounds measurements of batches of ops operations each (the
// smallest is the one least disturbed by preemption and interrupts). A
// figure of CPU time divided by Unit is a count of calibration operations,
// comparable across machines of one kind. rounds and ops must be positive.
func Unit(rounds, ops int) (time.Duration, error) {
	if rounds < 1 || ops < 1 {
		return 0, fmt.Errorf("cpuclock: rounds %d and ops %d must be positive", rounds, ops)
	}
	best := time.Duration(-1)
	var sink float64
	for range rounds {
		before, err := Process()
		if err != nil {
			return 0, err
		}
		for range ops {
			CalibrationOp(&sink)
		}
		after, err := Process()
		if err != nil {
			return 0, err
		}
		if d := after - before; best < 0 || d < best {
			best = d
		}
	}
	if sink == 0 {
		return 0, fmt.Errorf("cpuclock: the calibration loop summed to zero")
	}
	if best <= 0 {
		return 0, fmt.Errorf("cpuclock: %d calibration operations took no measurable CPU time; use more", ops)
	}
	return best / time.Duration(ops), nil
}

// Measure runs f and returns the CPU time the process spent while it ran,
// with f's error.
func Measure(f func() error) (time.Duration, error) {
	before, err := Process()
	if err != nil {
		return 0, err
	}
	ferr := f()
	after, err := Process()
	if err != nil {
		return 0, err
	}
	return after - before, ferr
}

// userHZ is the unit of the CPU times in /proc/PID/stat: Linux reports them
// in clock ticks of USER_HZ, 100 per second on every architecture Go
// supports (the kernel's ABI, independent of its internal HZ).
const userHZ = 100

// OfPID returns the CPU time (user plus system) that the process pid has
// consumed so far, read from /proc/PID/stat (Linux only) to a resolution of
// 10 ms: for a process a test started, such as the built pwsd binary of an
// end-to-end test.
func OfPID(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpuclock: reading the CPU time of process %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after its closing parenthesis start at field 3 (state);
	// utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpuclock: /proc/%d/stat has no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("cpuclock: /proc/%d/stat has %d fields after the name", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpuclock: /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
