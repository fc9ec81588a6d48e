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

// TestHelpColumnsAlign: in `pwsd --help` every variable's default and
// meaning start at the same column as every other's, and the commands'
// descriptions line up too (the columns used to be fixed widths that long
// names and defaults overflowed).
func TestHelpColumnsAlign(t *testing.T) {
	t.Parallel()
	lines := strings.Split(usage(), "\n")
	defCol, helpCol, cmdCol := -1, -1, -1
	envRows := 0
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "  PWSD_"):
			envRows++
			f := regexp.MustCompile(`^  (PWSD_[A-Z_]+ +)(\S+ +)`).FindStringSubmatchIndex(line)
			if f == nil {
				t.Fatalf("unreadable --help row %q", line)
			}
			d, h := f[3], f[5] // where the default and the meaning start
			if defCol == -1 {
				defCol, helpCol = d, h
			}
			if d != defCol || h != helpCol {
				t.Errorf("--help row %q: default at column %d, meaning at %d; other rows %d and %d", line, d, h, defCol, helpCol)
			}
		case strings.HasPrefix(line, "  pwsd"):
			// the command's words are one space apart; its description follows two or more
			m := regexp.MustCompile(`^  \S+(?: \S+)* {2,}`).FindStringIndex(line)
			if m == nil {
				t.Fatalf("unreadable --help command %q", line)
			}
			c := m[1]
			if cmdCol == -1 {
				cmdCol = c
			}
			if c != cmdCol {
				t.Errorf("--help command %q: description at column %d, others at %d", line, c, cmdCol)
			}
		}
	}
	if envRows != len(envVars) {
		t.Fatalf("--help lists %d variables, pwsd reads %d", envRows, len(envVars))
	}
}
