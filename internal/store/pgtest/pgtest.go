package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable holding an administrative URL of a test server.
const EnvURL = "PWSD_TEST_DATABASE_URL"

// envRequire, when set to a non-empty value, turns a missing server into a
// test failure instead of a skip.
const envRequire = "PWSD_REQUIRE_POSTGRES"

// Main runs a package's tests with a server available: when EnvURL is unset
// it tries to start a private cluster and stops it after the tests. Call it
// from TestMain: func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }.
func Main(m *testing.M) int {
	if os.Getenv(EnvURL) != "" {
		return m.Run()
	}
	script := repoScript()
	start := exec.Command("bash", script, "start") // its own directory and free port
	start.Stderr = os.Stderr
	out, err := start.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: could not start a PostgreSQL cluster: %v\n", err)
		return m.Run()
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if name, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok {
			vars[name] = strings.Trim(value, "'")
		}
	}
	defer func() {
		stop := exec.Command("bash", script, "stop")
		stop.Env = append(os.Environ(), "PWSD_PG_DIR="+vars["PWSD_PG_DIR"])
		_ = stop.Run()
	}()
	os.Setenv(EnvURL, vars[EnvURL])
	return m.Run()
}

func repoScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "pg.sh")
}

// AdminURL returns the administrative URL, skipping (or failing, under
// envRequire) when no server is available.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv(envRequire) != "" {
			t.Fatalf("%s is set but no PostgreSQL server is available (%s unset)", envRequire, EnvURL)
		}
		t.Skipf("no PostgreSQL server: set %s", EnvURL)
	}
	return u
}

// NewDatabase creates an empty database on the test server and returns its
// URL; the database is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "pwsd_test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connecting to test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating test database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("parsing %s: %v", EnvURL, err)
	}
	u.Path = "/" + name
	return u.String()
}
