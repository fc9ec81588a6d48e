package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestComposeSafeByDefault reads docker-compose.yml (no Docker engine runs
// here) and checks issue 31's deployment items: the API needs tokens from a
// mounted file; /metrics has its own port, never published; no password is
// written in the file (it comes from the environment, required); pwsd has a
// healthcheck that runs the binary itself; every PWSD_ setting it sets is
// one pwsd knows; and the image's build context keeps .git, so the binary
// carries its commit (GET /version).
func TestComposeSafeByDefault(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Environment map[string]string `json:"environment"`
			Ports       []string          `json:"ports"`
			Secrets     []string          `json:"secrets"`
			Healthcheck struct {
				Test []string `json:"test"`
			} `json:"healthcheck"`
		} `json:"services"`
		Secrets map[string]struct {
			File string `json:"file"`
		} `json:"secrets"`
	}
	if err := json.Unmarshal(js, &c); err != nil {
		t.Fatal(err)
	}
	p, ok := c.Services["pwsd"]
	if !ok {
		t.Fatal("no pwsd service")
	}
	env := p.Environment
	if f := env["PWSD_API_TOKENS_FILE"]; !strings.HasPrefix(f, "/run/secrets/") || !slices.Contains(p.Secrets, strings.TrimPrefix(f, "/run/secrets/")) || c.Secrets[strings.TrimPrefix(f, "/run/secrets/")].File == "" {
		t.Errorf("PWSD_API_TOKENS_FILE %q is not a mounted secret file", f)
	}
	metrics := env["PWSD_METRICS_ADDR"]
	if metrics == "" {
		t.Error("/metrics is served on the API address (no PWSD_METRICS_ADDR)")
	}
	for _, port := range p.Ports {
		if strings.HasSuffix(port, strings.TrimPrefix(metrics, ":")) || strings.HasSuffix(port, ":9090") {
			t.Errorf("the metrics port is published: %q", port)
		}
	}
	secretRef := regexp.MustCompile(`\$\{PWSD_DB_PASSWORD:\?[^}]*\}`)
	if pw := c.Services["postgres"].Environment["POSTGRES_PASSWORD"]; !secretRef.MatchString(pw) {
		t.Errorf("POSTGRES_PASSWORD %q is not required from the environment", pw)
	}
	if u := env["PWSD_DATABASE_URL"]; !secretRef.MatchString(u) {
		t.Errorf("PWSD_DATABASE_URL %q does not take its password from the environment", u)
	}
	if hc := strings.Join(p.Healthcheck.Test, " "); !strings.Contains(hc, "pwsd healthcheck") {
		t.Errorf("pwsd's healthcheck is %q, want the binary's own `pwsd healthcheck`", hc)
	}
	for name := range env {
		if !slices.ContainsFunc(envVars, func(v envVar) bool { return v.name == name }) {
			t.Errorf("compose sets %s, which pwsd does not read", name)
		}
	}
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(ignore), "\n") {
		if l := strings.TrimSpace(line); l == ".git" || l == ".git/" || l == "/.git" {
			t.Error(".dockerignore drops .git: the image could not name its commit")
		}
	}
}
