package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pwsd/pwsd/internal/store/pgtest"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the pwsd binary the end-to-end tests share, compiled on first use
// into dir (removed by TestMain).
var built struct {
	once          sync.Once
	dir, bin, err string
}

// buildBinary compiles pwsd once per test binary run and returns its path;
// the tests, parallel ones included, share it (each runs its own process).
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "pwsd-e2e-")
		if err != nil {
			built.err = err.Error()
			return
		}
		built.dir = dir
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "pwsd"), ".")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			built.err = fmt.Sprintf("%v\n%s", err, stderr.Bytes())
			return
		}
		built.bin = filepath.Join(dir, "pwsd")
	})
	if built.err != "" {
		t.Fatalf("building pwsd: %s", built.err)
	}
	return built.bin
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer collects a process's output; safe for the copying goroutine
// and the test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a running pwsd binary.
type proc struct {
	cmd  *exec.Cmd
	addr string
	logs *syncBuffer
	done chan error
}

// start runs bin with env on a free port and waits for /healthz.
func start(t *testing.T, bin string, env ...string) *proc {
	t.Helper()
	addr := freePort(t)
	p := &proc{addr: addr, logs: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin)
	p.cmd.Env = append(os.Environ(), append([]string{"PWSD_ADDR=" + addr}, env...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if r, err := http.Get("http://" + addr + "/healthz"); err == nil {
			r.Body.Close()
			return p
		}
		select {
		case err := <-p.done:
			t.Fatalf("pwsd exited early: %v\n%s", err, p.logs)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("pwsd did not become healthy:\n%s", p.logs)
	return nil
}

func (p *proc) url(path string) string { return "http://" + p.addr + path }

func httpDo(t *testing.T, method, url, ct, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// TestEndToEndEmbedded drives the built binary over real HTTP with the
// embedded store: operations endpoints, a sample round trip, a validation
// problem, then graceful shutdown on SIGTERM.
func TestEndToEndEmbedded(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	p := start(t, bin)
	for _, path := range []string{"/healthz", "/readyz", "/docs/index.html", "/openapi.json", "/metrics"} {
		if st, _ := httpDo(t, "GET", p.url(path), "", ""); st != 200 {
			t.Errorf("GET %s: %d", path, st)
		}
	}
	st, body := httpDo(t, "POST", p.url("/v1/samples"), "application/json",
		`{"privacy":{"epsilon":1,"delta":0.5},"sampling":{"scheme":"none"},"elements":[{"key":"MARKER-e2e","frequency":50}]}`)
	if st != 201 {
		t.Fatalf("POST /v1/samples: %d %s", st, body)
	}
	var smp struct {
		ID       string `json:"id"`
		Elements []struct {
			Key string `json:"key"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(body, &smp); err != nil || smp.ID == "" {
		t.Fatalf("bad sample %s: %v", body, err)
	}
	if st, _ := httpDo(t, "GET", p.url("/v1/samples/"+smp.ID), "", ""); st != 200 {
		t.Fatalf("GET sample: %d", st)
	}
	st, body = httpDo(t, "POST", p.url("/v1/samples"), "application/json", `{"privacy":{"epsilon":-1,"delta":2},"sampling":{"scheme":"none"},"elements":[]}`)
	if st != 422 || !strings.Contains(string(body), `"privacy.epsilon"`) || !strings.Contains(string(body), `"privacy.delta"`) {
		t.Fatalf("validation: %d %s", st, body)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("pwsd exited with %v after SIGTERM\n%s", err, p.logs)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("pwsd did not stop after SIGTERM")
	}
	if strings.Contains(p.logs.String(), "MARKER-e2e") {
		t.Fatal("a key reached the logs")
	}
}

// TestEndToEndPostgres: start-up applies the migrations to an empty database
// (schema_migrations exists), /readyz is 200, and 503 once the database is gone.
func TestEndToEndPostgres(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	bin := buildBinary(t)
	p := start(t, bin, "PWSD_DATABASE_URL="+dbURL)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	var version int
	var dirty bool
	if err := conn.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty); err != nil {
		t.Fatalf("schema_migrations: %v", err)
	}
	conn.Close(ctx)
	if dirty || version < 1 {
		t.Fatalf("schema_migrations at %d dirty=%v", version, dirty)
	}
	if st, b := httpDo(t, "GET", p.url("/readyz"), "", ""); st != 200 {
		t.Fatalf("/readyz with database up: %d %s", st, b)
	}

	// Take the database away: drop it (terminating pwsd's connections).
	admin, err := pgx.Connect(ctx, os.Getenv(pgtest.EnvURL))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := dbURL[strings.LastIndex(dbURL, "/")+1:]
	if i := strings.IndexByte(name, '?'); i >= 0 {
		name = name[:i]
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("DROP DATABASE %s WITH (FORCE)", name)); err != nil {
		t.Fatal(err)
	}
	if st, b := httpDo(t, "GET", p.url("/readyz"), "", ""); st != 503 {
		t.Fatalf("/readyz with database gone: %d %s", st, b)
	}
	if st, _ := httpDo(t, "GET", p.url("/healthz"), "", ""); st != 200 {
		t.Fatalf("/healthz must stay 200 while the process is up: %d", st)
	}
}
