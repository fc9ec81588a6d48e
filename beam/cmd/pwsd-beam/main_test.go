package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildAll builds the named packages (output name -> package) into dir in
// parallel with `go build`, passing ldflags to the first one.
func buildAll(t *testing.T, dir string, pkgs map[string]string, stamped string, ldflags string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(pkgs))
	for name, pkg := range pkgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"build", "-o", filepath.Join(dir, name)}
			if name == stamped {
				args = append(args, "-ldflags", ldflags)
			}
			out, err := exec.Command("go", append(args, pkg)...).CombinedOutput()
			if err != nil {
				errs <- fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// summary is the line pwsd-beam prints.
type summary struct {
	Valid    int64  `json:"records_valid"`
	Invalid  int64  `json:"records_invalid"`
	Clamped  int64  `json:"weights_clamped"`
	Reported int64  `json:"keys_reported"`
	Meta     string `json:"meta"`
}

func runBeam(ctx context.Context, t *testing.T, bin string, args ...string) summary {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pwsd-beam %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String(), 4000))
	}
	var s summary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("pwsd-beam printed %q: %v", stdout.String(), err)
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// readShards returns every output file under dir (name -> content), the
// header line excepted (it holds a fresh id and time).
func readShards(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// TestSeparateWorkers runs the pipeline twice on the same input with the
// same seed: once on prism in this process's child with LOOPBACK workers
// (every DoFn inside the submitting process), and once submitted to a prism
// job server (started here) with --runner=universal
// --environment_type=PROCESS, whose workers are separate processes started
// from the Go SDK's boot program (through scripts/beam-boot-wrapper.sh, the
// workaround for prism v2.77.0's quoted --id) running the staged pwsd-beam
// binary. Input, seed and output are local files the workers share. The
// shards and dead letters must be byte-identical and the counts equal; the
// seed's hex must appear neither in the job server's log (which prints the
// job's pipeline options as the workers receive them) nor in any output.
func TestSeparateWorkers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the job server and worker")
	}
	dir := t.TempDir()
	// A unique stamp makes this run's worker binary recognisable among the
	// copies boot leaves in /tmp/bin*/worker (removed at the end).
	var stamp [8]byte
	_, _ = rand.Read(stamp[:])
	buildAll(t, dir, map[string]string{
		"pwsd-beam": ".",
		"prism":     "github.com/apache/beam/sdks/v2/go/cmd/prism",
		"boot":      "github.com/apache/beam/sdks/v2/go/container",
	}, "pwsd-beam", "-X main.buildStamp="+hex.EncodeToString(stamp[:]))
	wrapper, err := os.ReadFile(filepath.Join("..", "..", "..", "scripts", "beam-boot-wrapper.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "beam-boot-wrapper.sh"), wrapper, 0o755); err != nil {
		t.Fatal(err)
	}
	worker := filepath.Join(dir, "pwsd-beam")
	before, _ := filepath.Glob("/tmp/bin*")
	t.Cleanup(func() { removeWorkerCopies(t, worker, before) })

	// Input: 3000 keys, key k with 1 + k%9 records of weight 1..4, and two
	// bad records.
	var in bytes.Buffer
	for k := 0; k < 3000; k++ {
		for r := 0; r <= k%9; r++ {
			fmt.Fprintf(&in, "{\"user\":%d,\"key\":\"k%d\",\"w\":%d}\n", r, k, 1+(k+r)%4)
		}
	}
	in.WriteString("not json\n{\"key\":\"\",\"w\":1}\n")
	input := filepath.Join(dir, "raw.ndjson")
	if err := os.WriteFile(input, in.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	seedHex := hex.EncodeToString(seed)
	seedFile := filepath.Join(dir, "seed.hex")
	if err := os.WriteFile(seedFile, []byte(seedHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	port := freePort(t)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	// The job server's output goes to a file (a pipe would be held open by
	// the worker processes it starts), and it runs in its own process
	// group so that the boot and worker processes it started end with it.
	logPath := filepath.Join(dir, "prism.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	prismLog := func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
	prism := exec.Command(filepath.Join(dir, "prism"), fmt.Sprintf("--job_port=%d", port), "--serve_http=false")
	prism.Env = append(os.Environ(), "PWSD_BEAM_WORKDIR="+work)
	prism.Dir = work // boot writes pipeline_options.json in its working directory
	prism.Stdout, prism.Stderr = logFile, logFile
	prism.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := prism.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-prism.Process.Pid, syscall.SIGKILL)
		_ = prism.Wait()
	}()
	endpoint := fmt.Sprintf("localhost:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", endpoint)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the prism job server did not start: %v\n%s", err, prismLog())
		}
		time.Sleep(50 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	common := []string{"--input", input, "--weight-field", "w", "--max-weight", "3", "--epsilon", "2", "--delta", "1e-4",
		"--scheme", "ppswor", "--threshold", "0.5", "--shards", "3", "--seed-uri", seedFile}
	loop := runBeam(ctx, t, worker, append(common, "--output", filepath.Join(dir, "loopback", "s"))...)
	proc := runBeam(ctx, t, worker, append(common, "--output", filepath.Join(dir, "process", "s"),
		"--runner=universal", "--endpoint="+endpoint, "--environment_type=PROCESS",
		`--environment_config={"command":"`+filepath.Join(dir, "beam-boot-wrapper.sh")+`"}`,
		"--worker_binary="+worker)...)

	if !strings.Contains(prismLog(), "Provision info") {
		t.Fatalf("no boot process ran on the job server:\n%s", tail(prismLog(), 4000))
	}
	if loop.Valid != proc.Valid || loop.Invalid != proc.Invalid || loop.Clamped != proc.Clamped || loop.Reported != proc.Reported {
		t.Fatalf("counts differ: loopback %+v, process %+v", loop, proc)
	}
	if loop.Invalid != 2 || loop.Reported == 0 || loop.Clamped == 0 {
		t.Fatalf("loopback counts %+v: want 2 invalid, some clamped, some reported", loop)
	}
	a, b := readShards(t, filepath.Join(dir, "loopback")), readShards(t, filepath.Join(dir, "process"))
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range a {
			if !yield(k) {
				return
			}
		}
	})
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("loopback wrote %d files, process %d", len(a), len(b))
	}
	for _, n := range names {
		if !bytes.Equal(a[n], b[n]) {
			t.Fatalf("%s differs between the loopback and the separate-worker run", n)
		}
		if bytes.Contains(a[n], []byte(seedHex)) {
			t.Fatalf("%s contains the seed", n)
		}
	}
	if strings.Contains(prismLog(), seedHex) {
		t.Fatal("the job server's log (pipeline options, worker logs) contains the seed")
	}
	t.Logf("%d files identical; %d keys reported", len(a), loop.Reported)
}

// removeWorkerCopies removes the /tmp/binNNN directories boot created for
// this test's worker binary (boot copies the staged binary to
// /tmp/binNNN/worker and never removes it): those not in before whose
// worker file is identical to bin.
func removeWorkerCopies(t *testing.T, bin string, before []string) {
	want, err := os.ReadFile(bin)
	if err != nil {
		return
	}
	after, _ := filepath.Glob("/tmp/bin*")
	for _, d := range after {
		if slices.Contains(before, d) {
			continue
		}
		got, err := os.ReadFile(filepath.Join(d, "worker"))
		if err == nil && bytes.Equal(got, want) {
			if err := os.RemoveAll(d); err != nil {
				t.Logf("removing boot's copy %s: %v", d, err)
			}
		}
	}
}
