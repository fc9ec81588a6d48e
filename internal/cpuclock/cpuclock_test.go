package cpuclock

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestMeasureCountsCalibrationWork checks that CPU time measured around a
// known number of calibration operations is that number of Units, within a
// factor of 3 either way: a Process that read the wall clock would still
// pass on a quiet machine, but one that read nothing (zero), or only the
// system time, fails.
func TestMeasureCountsCalibrationWork(t *testing.T) {
	// Serial: Process counts every goroutine of the process.
	unit, err := Unit(5, 20_000)
	if err != nil {
		t.Fatal(err)
	}
	const ops = 200_000
	sink := 0.0
	cpu, err := Measure(func() error {
		for range ops {
			CalibrationOp(&sink)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	units := float64(cpu) / float64(unit)
	t.Logf("unit %v, %d ops measured as %.0f units (sink %g)", unit, ops, units, sink)
	if units < ops/3 || units > 3*ops {
		t.Errorf("%d calibration operations measured as %.0f units", ops, units)
	}
}

func TestUnitValidates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ rounds, ops int }{{0, 1}, {1, 0}, {-1, 5}} {
		if _, err := Unit(c.rounds, c.ops); err == nil {
			t.Errorf("Unit(%d, %d) accepted", c.rounds, c.ops)
		}
	}
}

// ExampleMeasure shows how a test checks a cost model in CPU time: the
// work's CPU time divided by the calibration unit is a machine-independent
// count, compared with what the model allows.
func ExampleMeasure() {
	unit, _ := Unit(3, 10_000)
	var sink float64
	cpu, _ := Measure(func() error {
		for range 50_000 {
			CalibrationOp(&sink)
		}
		return nil
	})
	units := float64(cpu) / float64(unit)
	fmt.Println(units > 10_000 && units < 250_000)
	// Output: true
}

// TestOfPIDAgreesWithProcess: this process's CPU time read from /proc
// agrees with getrusage within the 10 ms ticks of /proc (and a little CPU
// spent between the two reads), after enough work that a reader which
// returned zero, or the wrong fields, would be far off.
func TestOfPIDAgreesWithProcess(t *testing.T) {
	// Serial: Process counts every goroutine of the process.
	var sink float64
	for range 100_000 {
		CalibrationOp(&sink)
	}
	self, err := Process()
	if err != nil {
		t.Fatal(err)
	}
	proc, err := OfPID(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := proc - self; d < -20*time.Millisecond || d > 50*time.Millisecond || proc <= 0 {
		t.Errorf("/proc says %v, getrusage %v", proc, self)
	}
	if _, err := OfPID(-1); err == nil {
		t.Error("OfPID(-1) read something")
	}
}
