package examples

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// markdown is README.md and every page under docs/, by path from the
// repository root.
func markdown(t *testing.T) map[string]string {
	t.Helper()
	pages := map[string]string{}
	names, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range append(names, "../README.md", "../CHANGELOG.md") {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		pages[strings.TrimPrefix(n, "../")] = string(b)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d Markdown pages", len(pages))
	}
	return pages
}

// sources is the text of every file of the repository that is code, not
// prose: Go sources (both modules), shell scripts, the Makefile, compose
// and CI files.
func sources(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "node_modules" || n == ".git" || n == "ogenclient" || n == "client" {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if ext == ".go" || ext == ".sh" || ext == ".yml" || ext == ".yaml" || d.Name() == "Makefile" || d.Name() == "Dockerfile" || d.Name() == "run" {
			c, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.Write(c)
			b.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// externalFlags are flags the pages name that belong to programs pwsd does
// not define: Beam's runner options (registered by the Beam SDK in
// pwsd-beam), the job servers' and docker's, curl's. removedFlags are
// flags the pages name as gone; they must not be defined.
var (
	externalFlags = map[string]string{
		"runner": "Beam", "endpoint": "Beam", "environment_type": "Beam", "environment_config": "Beam",
		"worker_binary": "Beam", "project": "Beam (dataflow)", "region": "Beam (dataflow)",
		"staging_location": "Beam (dataflow)", "temp_location": "Beam (dataflow)", "dot_file": "Beam (dot)",
		"worker": "the Beam SDK harness", "id": "the Beam SDK harness (boot)",
		"flink-master": "Beam's Flink job server", "spark-master-url": "Beam's Spark job server",
		"net": "docker", "data-binary": "curl",
	}
	removedFlags = map[string]bool{"seed-file": true}
)

// TestDocsNameWhatExists: every --flag, PWSD_* environment variable and
// route that README.md and docs/ name exists in the code (flags defined
// with package flag in either module, or one of the other programs'
// listed in externalFlags; variables read somewhere in the code or
// scripts; routes in the OpenAPI document or the router's few
// undocumented ones), and every relative link resolves to a file and, with
// a #fragment, to a heading of it.
func TestDocsNameWhatExists(t *testing.T) {
	t.Parallel()
	pages := markdown(t)
	code := sources(t)

	defined := map[string]bool{"help": true, "version": true} // pwsd's own, read from os.Args
	flagDef := regexp.MustCompile(`\.(?:String|Bool|Int|Int64|Uint|Uint64|Float64|Duration|Func|Text)(?:Var)?\((?:&?[\w.\[\]]+, )?"([a-z][a-z0-9_-]*)"`)
	for _, m := range flagDef.FindAllStringSubmatch(code, -1) {
		defined[m[1]] = true
	}
	if !defined["seed-uri"] || !defined["s3-path-style"] || !defined["records"] {
		t.Fatalf("the flag scan found %d flags but not pwsd-beam's or pwsd-gen's: it cannot check anything", len(defined))
	}
	for name := range removedFlags {
		if defined[name] {
			t.Errorf("--%s is listed as removed but is defined", name)
		}
	}

	var doc map[string]any
	b, err := os.ReadFile("../openapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var routes []*regexp.Regexp
	for p := range doc["paths"].(map[string]any) {
		routes = append(routes, routePattern(p))
	}
	for _, p := range []string{"/metrics", "/docs", "/planner"} { // served, not API operations
		routes = append(routes, routePattern(p))
	}

	flagUse := regexp.MustCompile("(?:^|[\\s`'(\\[|])--([a-z][a-z0-9_-]*)")
	envUse := regexp.MustCompile(`PWSD_[A-Z0-9_]*[A-Z0-9]`)
	routeUse := regexp.MustCompile("(?:^|[\\s`'(\"|])(/(?:v1/|healthz|readyz|metrics|docs|planner|openapi\\.json|swagger\\.json)[A-Za-z0-9_{}$:.\\-/]*)")
	for path, text := range pages {
		for _, m := range flagUse.FindAllStringSubmatch(text, -1) {
			name := m[1]
			if !defined[name] && externalFlags[name] == "" && !removedFlags[name] {
				t.Errorf("%s names --%s, which no program here defines", path, name)
			}
		}
		for _, name := range envUse.FindAllString(text, -1) {
			if name == "PWSD_MAX" { // "PWSD_MAX_*", the family
				continue
			}
			if !strings.Contains(code, name) {
				t.Errorf("%s names %s, which nothing reads", path, name)
			}
		}
		for _, m := range routeUse.FindAllStringSubmatch(hypothetical.ReplaceAllString(text, ""), -1) {
			p := strings.TrimRight(m[1], ".:,")
			if strings.HasPrefix(p, "/docs/") && !strings.HasPrefix(p, "/docs/index") {
				continue // a path under docs/ of the repository, not the route
			}
			if !slices.ContainsFunc(routes, func(r *regexp.Regexp) bool { return r.MatchString(p) }) {
				t.Errorf("%s names the route %s, which the router does not serve", path, p)
			}
		}
		checkLinks(t, path, text, pages)
	}
}

// hypothetical is a route a page names as an example that does not
// exist ("a hypothetical route, `GET /v1/...`"): not checked.
var hypothetical = regexp.MustCompile("hypothetical route, `[A-Z]+ /v1/[^`]*`")

// routePattern matches the concrete and templated forms of a route:
// {name} in the route stands for one segment, which a page may write as
// {anything}, $shellvar or a value.
func routePattern(route string) *regexp.Regexp {
	parts := strings.Split(route, "{")
	var re strings.Builder
	re.WriteString("^")
	for i, part := range parts {
		if i > 0 {
			_, part, _ = strings.Cut(part, "}")
			re.WriteString(`[^/]+`)
		}
		re.WriteString(regexp.QuoteMeta(part))
	}
	re.WriteString("/?$")
	return regexp.MustCompile(re.String())
}

// link is a Markdown link's target.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// checkLinks checks page's relative links: the file exists, and a
// #fragment names a heading of the target page (GitHub's anchors).
func checkLinks(t *testing.T, page, text string, pages map[string]string) {
	t.Helper()
	for _, m := range link.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, frag, _ := strings.Cut(target, "#")
		resolved := page
		if file != "" {
			resolved = filepath.Clean(filepath.Join(filepath.Dir(page), file))
			if _, err := os.Stat(filepath.Join("..", resolved)); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
		}
		if frag == "" {
			continue
		}
		body, ok := pages[resolved]
		if !ok {
			continue // a fragment into a non-Markdown file (a line of code): not checked
		}
		if !slices.Contains(anchors(body), frag) {
			t.Errorf("%s links to %s: %s has no heading with the anchor #%s", page, target, resolved, frag)
		}
	}
}

// anchors are the anchors GitHub gives a page's headings: lower case,
// spaces to hyphens, other punctuation dropped, repeats numbered.
func anchors(md string) []string {
	var out []string
	seen := map[string]int{}
	inFence := false
	for line := range strings.Lines(md) {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var a strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
				a.WriteRune(r)
			}
		}
		s := a.String()
		if n := seen[s]; n > 0 {
			out = append(out, s+"-"+strconv.Itoa(n))
		} else {
			out = append(out, s)
		}
		seen[s]++
	}
	return out
}
