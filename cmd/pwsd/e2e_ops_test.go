package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// getWith GETs url with a bearer token and returns the status.
func getWith(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestE2ETokensReloadOnSIGHUP: the built binary reloads its tokens file on
// SIGHUP (issue 31): a token added to the file is accepted after the
// signal, one removed is refused, and a broken file leaves the tokens in
// force. It waits for the reload by polling (a liveness bound of a minute),
// never for a fixed time. GET /version answers without a token and names a
// commit and the Go version.
func TestE2ETokensReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens.json")
	write := func(tokens ...string) {
		t.Helper()
		var es []string
		for _, tok := range tokens {
			es = append(es, `{"token":"`+tok+`","role":"writer"}`)
		}
		if err := os.WriteFile(file, []byte(`{"tokens":[`+strings.Join(es, ",")+`]}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const old, added = "old-token-0123456789", "new-token-0123456789"
	write(old)
	p := start(t, buildBinary(t), "PWSD_API_TOKENS_FILE="+file)
	url := p.url("/v1/datasets")
	if s := getWith(t, url, old); s != http.StatusOK {
		t.Fatalf("the first token: %d", s)
	}
	if s := getWith(t, url, added); s != http.StatusUnauthorized {
		t.Fatalf("a token not yet in the file: %d", s)
	}
	write(added)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); getWith(t, url, added) != http.StatusOK; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the added token was refused a minute after SIGHUP; logs:\n%s", p.logs.String())
		}
	}
	if s := getWith(t, url, old); s != http.StatusUnauthorized {
		t.Fatalf("a removed token after the reload: %d", s)
	}
	if err := os.WriteFile(file, []byte(`not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(p.logs.String(), "could not be reloaded"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a broken tokens file was not reported within a minute")
		}
	}
	if s := getWith(t, url, added); s != http.StatusOK {
		t.Fatalf("the tokens in force after a broken file: %d", s)
	}
	st, body := httpDo(t, http.MethodGet, p.url("/version"), "", "")
	var v struct {
		Commit    string `json:"commit"`
		GoVersion string `json:"go_version"`
	}
	if st != http.StatusOK || json.Unmarshal(body, &v) != nil || v.Commit == "" || !strings.HasPrefix(v.GoVersion, "go") {
		t.Fatalf("/version: %d %s", st, body)
	}
}

// TestE2EHealthcheckCommand: `pwsd healthcheck` (the compose healthcheck)
// succeeds against a running pwsd on PWSD_ADDR and fails where none listens.
func TestE2EHealthcheckCommand(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	p := start(t, bin)
	ok := exec.Command(bin, "healthcheck")
	ok.Env = append(os.Environ(), "PWSD_ADDR="+p.addr)
	if out, err := ok.CombinedOutput(); err != nil {
		t.Fatalf("healthcheck against a running pwsd: %v %s", err, out)
	}
	bad := exec.Command(bin, "healthcheck")
	bad.Env = append(os.Environ(), "PWSD_ADDR="+freePort(t))
	if out, err := bad.CombinedOutput(); err == nil {
		t.Fatalf("healthcheck where nothing listens succeeded: %s", out)
	}
}
