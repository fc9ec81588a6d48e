package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestConfigurationDocumented: docs/configuration.md has a row for every
// variable pwsd reads (envVars) with its default, and neither it nor the
// README's short table names a variable pwsd does not read.
func TestConfigurationDocumented(t *testing.T) {
	t.Parallel()
	known := map[string]envVar{}
	for _, v := range envVars {
		known[v.name] = v
	}
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	row := regexp.MustCompile("(?m)^\\| ((?:`PWSD_[A-Z_]+`(?: / )?)+) \\| ([^|]*) \\|")
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		for _, name := range regexp.MustCompile("PWSD_[A-Z_]+").FindAllString(m[1], -1) {
			rows[name] = strings.Trim(strings.TrimSpace(m[2]), "`")
		}
	}
	for _, v := range envVars {
		def, ok := rows[v.name]
		if !ok {
			t.Errorf("docs/configuration.md has no row for %s", v.name)
			continue
		}
		if v.def != "" && def != v.def {
			t.Errorf("docs/configuration.md: %s defaults to %q, pwsd to %q", v.name, def, v.def)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range rows {
		if _, ok := known[name]; !ok {
			t.Errorf("docs/configuration.md documents %s, which pwsd does not read", name)
		}
	}
	for _, name := range regexp.MustCompile("PWSD_[A-Z_]*[A-Z]").FindAllString(string(readme), -1) {
		if _, ok := known[name]; !ok && name != "PWSD_MAX" {
			t.Errorf("README.md names %s, which pwsd does not read", name)
		}
	}
}
