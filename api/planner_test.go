package api_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPlotsAndPlan: the plot endpoints answer well-formed SVG, the plan
// summary and the baselines answer the documented fields.
func TestPlotsAndPlan(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	base := "epsilon=0.5&delta=1e-4&scheme=priority&threshold=0.05&max_frequency=60"
	for _, path := range []string{
		"/v1/plots/reporting?" + base + "&baseline=sbh",
		"/v1/plots/bias?" + base + "&baseline=sbh&method=discrete",
		"/v1/plots/variance?" + base + "&estimator=biased_down",
		"/v1/plots/nrmse?epsilon=0.5&delta=1e-4&distribution=zipf&alpha=1&n=300&sweep_points=4",
	} {
		r := ts.get(t, path)
		if r.status != 200 || r.header.Get("Content-Type") != "image/svg+xml" {
			t.Fatalf("%s: %d %.300s", path, r.status, r.body)
		}
		dec := xml.NewDecoder(bytes.NewReader(r.body))
		paths := 0
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: invalid SVG: %v", path, err)
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
				paths++
			}
		}
		if paths < 3 {
			t.Fatalf("%s: only %d paths", path, paths)
		}
	}
	r := ts.get(t, "/v1/plan/summary?epsilon=0.5&delta=1e-4&scheme=priority&threshold=0.05&distribution=uniform&a=1&b=200")
	var sum struct {
		L                float64            `json:"L"`
		ReportedFraction map[string]float64 `json:"reported_fraction"`
		NRMSE            map[string]float64 `json:"nrmse"`
	}
	r.json(t, &sum)
	if r.status != 200 || sum.L <= 0 || sum.ReportedFraction["pws"] < sum.ReportedFraction["sbh"] || sum.NRMSE["pws"] <= 0 {
		t.Fatalf("summary: %d %s", r.status, r.body)
	}
	rep := ts.get(t, "/v1/tables/reporting?"+base+"&baseline=sbh")
	var rv struct {
		Pi         []float64 `json:"pi"`
		BaselinePi []float64 `json:"baseline_pi"`
	}
	rep.json(t, &rv)
	if len(rv.BaselinePi) != 60 {
		t.Fatalf("baseline_pi: %s", rep.body)
	}
	for i := range rv.Pi {
		if rv.BaselinePi[i] > rv.Pi[i]+1e-12 { // PWS is optimal: pi_i >= phi_i
			t.Fatalf("phi_%d = %g > pi = %g", i+1, rv.BaselinePi[i], rv.Pi[i])
		}
	}
	est := ts.get(t, "/v1/tables/estimators?"+base+"&baseline=sbh")
	if est.status != 200 || !strings.Contains(string(est.body), `"baseline_variance"`) {
		t.Fatalf("estimators baseline: %d %.300s", est.status, est.body)
	}
	for path, field := range map[string]string{
		"/v1/plan/summary?epsilon=0.5&delta=1e-4&distribution=pareto":     "distribution",
		"/v1/plots/nrmse?epsilon=-1&delta=1e-4&distribution=zipf&alpha=1": "epsilon",
		"/v1/plots/reporting?epsilon=1&delta=0.1&baseline=laplace":        "baseline",
	} {
		r := ts.get(t, path)
		if r.status != 422 || !strings.Contains(strings.Join(r.problem(t).fields(), ","), field) {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
	page := ts.get(t, "/planner")
	if page.status != 200 || !strings.Contains(page.header.Get("Content-Security-Policy"), "default-src 'self'") ||
		strings.Contains(string(page.body), "http://") || strings.Contains(string(page.body), "https://") {
		t.Fatalf("planner page: %d, CSP %q, external references present?", page.status, page.header.Get("Content-Security-Policy"))
	}
}

// TestPlanQueryNamesInvalidParameters: the planner routes read the privacy,
// sampling, method, g and estimator as the table routes do; each invalid
// value is a 422 naming its parameter, and one answer names every invalid
// parameter, typed or the planner's own.
func TestPlanQueryNamesInvalidParameters(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	ok := "distribution=zipf&alpha=1&n=100"
	for _, c := range []struct {
		name, query string
		fields      []string
		sweepFields []string // /v1/plots/nrmse, which sweeps, when it differs
	}{
		{"epsilon", "epsilon=-1&delta=1e-6&scheme=ppswor&threshold=0.1&" + ok, []string{"epsilon"}, nil},
		{"delta", "epsilon=0.5&delta=2&scheme=ppswor&threshold=0.1&" + ok, []string{"delta"}, nil},
		{"scheme", "epsilon=0.5&delta=1e-6&scheme=bernoulli&threshold=0.1&" + ok, []string{"scheme"}, nil},
		{"threshold", "epsilon=0.5&delta=1e-6&scheme=ppswor&threshold=0&" + ok, []string{"threshold"}, nil},
		{"power", "epsilon=0.5&delta=1e-6&scheme=ppswor&threshold=0.1&power=-2&" + ok, []string{"power"}, nil},
		{"custom", "epsilon=0.5&delta=1e-6&scheme=custom&probabilities=0.5,0.2&" + ok, []string{"probabilities[1]"},
			[]string{"probabilities[1]", "scheme"}}, // a custom scheme cannot sweep
		{"method", "epsilon=0.5&delta=1e-6&method=fast&" + ok, []string{"method"}, nil},
		{"g", "epsilon=0.5&delta=1e-6&g=cube&" + ok, []string{"g"}, nil},
		{"estimator", "epsilon=0.5&delta=1e-6&estimator=best&" + ok, []string{"estimator"}, nil},
		{"L too large (the planner's bound)", "epsilon=0.001&delta=1e-9&" + ok, []string{"epsilon"}, nil},
		{"several", "epsilon=0&delta=1e-6&method=x", []string{"epsilon", "method", "distribution"}, nil},
	} {
		for _, route := range []string{"/v1/plan/summary", "/v1/plots/nrmse"} {
			t.Run(c.name+" "+route, func(t *testing.T) {
				r := ts.get(t, route+"?"+c.query)
				if r.status != 422 {
					t.Fatalf("%d %s", r.status, r.body)
				}
				want := c.fields
				if route == "/v1/plots/nrmse" && c.sweepFields != nil {
					want = c.sweepFields
				}
				if got := r.problem(t).fields(); !slices.Equal(got, want) {
					t.Fatalf("fields %v, want %v", got, want)
				}
			})
		}
	}
}

// TestPlannerPageInBrowser drives /planner in headless Chromium. On first
// load of a shared link (the plan in its query string), without a click,
// the page takes the link's plan and shows the numbers and the four plots
// (not broken images); on a screenshot every plot draws PWS in one colour
// and sampled-SbH in another, the same in all four. A max_frequency the
// server refuses shows its 422 in words. Then a changed epsilon and a click
// on Update redraw the numbers and put the plan in the address bar, and no
// label is upper-cased.
func TestPlannerPageInBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	ts := newServer(t, nil)

	const rendered = `(() => {
		const ids = ["plot-reporting", "plot-bias", "plot-variance", "plot-nrmse"];
		const ok = ids.every(id => { const i = document.getElementById(id); return i && i.complete && i.naturalWidth > 0; });
		return ok && document.getElementById("num-L").textContent.trim() !== "–" &&
			document.getElementById("num-fraction").textContent.trim() !== "–";
	})()`
	// The first load is a shared link: the form takes its plan.
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/planner?epsilon=0.4&delta=1e-6&stream_epsilon=0.3&stream_universe_size=20000&stream_reps=10")); err != nil {
		t.Fatalf("browser: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](rendered, chromedp.WithPollingTimeout(5*time.Minute))); err != nil {
		t.Fatalf("first load did not draw the numbers and plots (without a click): %v", err)
	}
	if eps, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("epsilon"))); err != nil || eps != "0.4" {
		t.Fatalf("the link's epsilon: the form has %q (%v)", eps, err)
	}
	L, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("num-L")))
	if err != nil {
		t.Fatal(err)
	}
	rects, err := chromedp.Run(ctx, chromedp.Evaluate[[][4]float64](`["plot-reporting", "plot-bias", "plot-variance", "plot-nrmse"].map(id => {
		const r = document.getElementById(id).getBoundingClientRect();
		return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];
	})`))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("PWSD_SCREENSHOT_DIR"); dir != "" {
		_ = os.WriteFile(dir+"/planner.png", shot, 0o644)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// The plots draw lines: a rendered page has many dark pixels, a blank one none.
	if dark := darkPixels(img); dark < 2000 {
		t.Fatalf("screenshot has only %d dark pixels: plots did not render", dark)
	}
	// One colour per method in every plot (plotsvg's seriesColours).
	pws, sbh := color.RGBA{0, 114, 178, 255}, color.RGBA{213, 94, 0, 255}
	for k, r := range rects {
		area := image.Rect(int(r[0]), int(r[1]), int(r[0]+r[2]), int(r[1]+r[3]))
		if n := colourPixels(img, area, pws); n < 30 {
			t.Errorf("plot %d: %d pixels of the PWS colour, want its curve", k, n)
		}
		if n := colourPixels(img, area, sbh); n < 30 {
			t.Errorf("plot %d: %d pixels of the sampled-SbH colour, want its curve", k, n)
		}
		// No method is drawn in another plot's colour for another method
		// (PWS was vermillion and SbH green in three plots).
		if n := colourPixels(img, area, color.RGBA{0, 158, 115, 255}); n > 0 {
			t.Errorf("plot %d: %d pixels of green, a colour no method has", k, n)
		}
	}

	// Every select shows its longest option whole ("max_separation (Alg. 5)"
	// was cut off): the option's text, measured in the select's font, fits
	// the select's width less 28 px for the arrow and padding.
	cut, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const ctx = document.createElement("canvas").getContext("2d");
		const out = [];
		document.querySelectorAll("select").forEach(sel => {
			const st = getComputedStyle(sel);
			ctx.font = st.fontWeight + " " + st.fontSize + " " + st.fontFamily;
			[...sel.options].forEach(o => { if (ctx.measureText(o.text).width > sel.clientWidth - 28) out.push(sel.id + ": " + o.text + " (" + Math.round(ctx.measureText(o.text).width) + " px in " + sel.clientWidth + ")"); });
		});
		return out;
	})()`))
	if err != nil || len(cut) > 0 {
		t.Errorf("options cut off (%v): %q", err, cut)
	}

	// A plan the server refuses shows the refusal in words, naming the
	// parameter, not broken images (the summary and the NRMSE plot, which
	// do not take max_frequency, are the first load's, cached).
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("max_frequency"), "100000000")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("update"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("status").className === "error"`, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("a refused plan did not show an error: %v", err)
	}
	status, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("status")))
	if err != nil || !strings.Contains(status, "422") || !strings.Contains(status, "max_frequency") || strings.Contains(status, "could not be loaded") {
		t.Fatalf("status %q (%v): want the 422 in words naming max_frequency", status, err)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("max_frequency"), "1000")); err != nil {
		t.Fatal(err)
	}

	// The stream planner took the link's parameters and drew its table (the
	// three algorithms) and both plots; a refused plan shows its 422 in words.
	const streamsRendered = `(() => {
		const ok = ["plot-stream-epsilon", "plot-stream-sample"].every(id => { const i = document.getElementById(id); return i.complete && i.naturalWidth > 0; });
		return ok && document.querySelectorAll("#stream-rows tr").length === 3 && document.getElementById("stream-status").textContent.startsWith("Updated");
	})()`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](streamsRendered, chromedp.WithPollingTimeout(5*time.Minute))); err != nil {
		t.Fatalf("the stream planner did not draw its table and plots: %v", err)
	}
	if eps, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("stream_epsilon"))); err != nil || eps != "0.3" {
		t.Fatalf("the link's stream_epsilon: the form has %q (%v)", eps, err)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("stream_epsilon"), "0.7")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("stream-update"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("stream-status").className === "error"`, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("a refused stream plan did not show an error: %v", err)
	}
	if status, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("stream-status"))); err != nil || !strings.Contains(status, "422") || !strings.Contains(status, "epsilon") {
		t.Fatalf("stream status %q (%v): want the 422 in words naming epsilon", status, err)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("stream_epsilon"), "0.3")); err != nil {
		t.Fatal(err)
	}

	// Update redraws with the new parameters.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("epsilon"), "0.25")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("update"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("num-L").textContent.trim() !== `+strconv.Quote(strings.TrimSpace(L))+` && `+rendered,
		chromedp.WithPollingTimeout(4*time.Minute))); err != nil {
		t.Fatalf("Update did not redraw L (was %s): %v", L, err)
	}
	t.Logf("planner page: first load L = %s", L)

	// The address bar now carries the plan (the link to share), and no label is upper-cased
	// (which turned "L(ε, δ)" into "L(E, Δ)").
	loc, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.location.search`))
	if err != nil || !strings.Contains(loc, "epsilon=0.25") || !strings.Contains(loc, "stream_epsilon=0.3") || strings.Contains(loc, "token") {
		t.Fatalf("address bar after Update: %q (%v), want the plan with epsilon=0.25 and no token", loc, err)
	}
	upper, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("legend, .num .k")].filter(e => getComputedStyle(e).textTransform !== "none").length`))
	if err != nil || upper != 0 {
		t.Fatalf("%d labels are text-transformed (%v)", upper, err)
	}

}

// browser starts headless Chromium for t (skipping t when it is not
// installed, unless PWSD_REQUIRE_BROWSER is set) and returns its context,
// closed at the end of t. Its deadline is a liveness bound only
// (docs/testing.md): pages and plots are awaited as events; under -race on
// a busy 2-core machine the plots take tens of seconds, and only a hang
// reaches the bound.
func browser(t *testing.T) context.Context {
	t.Helper()
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("PWSD_REQUIRE_BROWSER") != "" {
			t.Fatal("PWSD_REQUIRE_BROWSER is set but chromium is not installed")
		}
		t.Skip("chromium not installed")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 1800),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("force-device-scale-factor", "1"), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	t.Cleanup(func() { cancel(); cancelTab(); cancelAlloc() })
	return ctx
}

// colourPixels counts the pixels of img in area within a small distance
// of c (antialiasing blends the lines' edges).
func colourPixels(img image.Image, area image.Rectangle, c color.RGBA) int {
	n := 0
	area = area.Intersect(img.Bounds())
	for y := area.Min.Y; y < area.Max.Y; y++ {
		for x := area.Min.X; x < area.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			d := func(v uint32, w uint8) int { return int(v>>8) - int(w) }
			if dr, dg, db := d(r, c.R), d(g, c.G), d(b, c.B); dr*dr+dg*dg+db*db < 40*40 {
				n++
			}
		}
	}
	return n
}

func darkPixels(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r+g+bl < 3*0x4000 {
				n++
			}
		}
	}
	return n
}

// TestSwaggerUIInBrowser drives /docs in headless Chromium: the operations
// render without a padlock each (a token is optional), the Authorize button
// is there, and the description is split into sections (markdown headings)
// that explain L.
func TestSwaggerUIInBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	ts := newServer(t, nil)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/docs")); err != nil {
		t.Fatalf("browser: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll(".opblock").length > 30`, chromedp.WithPollingTimeout(5*time.Minute))); err != nil {
		t.Fatalf("the operations did not render: %v", err)
	}
	counts, err := chromedp.Run(ctx, chromedp.Evaluate[[3]int](`[document.querySelectorAll(".opblock").length,
		document.querySelectorAll(".opblock .authorization__btn").length, document.querySelectorAll(".btn.authorize").length]`))
	if err != nil {
		t.Fatal(err)
	}
	if counts[1] != 0 || counts[2] != 1 {
		t.Errorf("%d operations: %d padlocks (want 0), %d Authorize buttons (want 1)", counts[0], counts[1], counts[2])
	}
	headings, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".info .markdown h2, .info .renderedMarkdown h2")].map(h => h.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Sanitized values are tokens", "Errors and requests", "Authentication"} {
		if !slices.Contains(headings, want) {
			t.Errorf("description headings %q lack %q", headings, want)
		}
	}
	info, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".info").textContent`))
	if err != nil || !strings.Contains(info, "L = L(ε, δ)") {
		t.Errorf("the description does not explain L (%v): %.300s", err, info)
	}
}
