package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/workload"
)

// allowRefusalEnv, set to 1, makes BenchmarkZipfWorkload log a refused
// release (non-201) instead of failing on it.
const allowRefusalEnv = "PWSD_BENCH_ALLOW_REFUSAL"

// newDefaultServer is the real router over a fresh in-memory store with the
// configuration `make run` serves when no PWSD_* variable is set
// (serveDefault). close stops the server, waits for the service's
// background work (as cmd/pwsd does on shutdown) and closes the store, and
// idle waits for that background work alone.
func newDefaultServer(tb testing.TB) (ts *httptest.Server, close, idle func()) {
	tb.Helper()
	st := store.NewMemory()
	st.LimitTableCache(store.DefaultTableCacheBytes)
	ts, wait := serveDefault(tb, st, nil)
	return ts, func() { ts.Close(); wait(); st.Close() }, wait
}

// serveDefault is the real router over st with pwsd's default
// configuration: default limits, table cache, estimator cache and work
// bound, production (crypto-seeded) randomness, info-level JSON logs
// (discarded); config, when not nil, changes the service's configuration
// first. It mirrors cmd/pwsd's serve. wait waits for the service's
// background work.
func serveDefault(tb testing.TB, st store.Store, config func(*service.Config)) (ts *httptest.Server, wait func()) {
	tb.Helper()
	limits := api.DefaultLimits()
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := service.Config{Store: st, Logger: log, IdempotencyWait: limits.RequestTimeout}
	if config != nil {
		config(&cfg)
	}
	svc, err := service.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ts = httptest.NewServer(api.NewRouter(api.Deps{Service: svc, Logger: log, Registry: prometheus.NewRegistry(), Limits: limits}))
	// Service.Wait through an interface: scripts/bench_compare.sh builds
	// this file into older revisions too, whose Service has no background
	// work and no Wait.
	wait = func() {}
	if w, ok := any(svc).(interface{ Wait() }); ok {
		wait = w.Wait
	}
	return ts, wait
}

// zipfRelease is the outcome of one POST /v1/samples.
type zipfRelease struct {
	status   int
	id       string
	reported int    // elements in the answer
	problem  []byte // the body of a refusal
}

// postZipf sends a JSON body to POST /v1/samples and reads the answer whole.
func postZipf(tb testing.TB, url string, body []byte) zipfRelease {
	res, err := http.Post(url+"/v1/samples", "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	if res.StatusCode != http.StatusCreated {
		return zipfRelease{status: res.StatusCode, problem: out}
	}
	var v struct {
		ID       string            `json:"id"`
		Elements []json.RawMessage `json:"elements"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		tb.Fatalf("decoding the 201 answer: %v", err)
	}
	return zipfRelease{status: res.StatusCode, id: v.ID, reported: len(v.Elements)}
}

// check fails the benchmark on a refused release, or, with
// PWSD_BENCH_ALLOW_REFUSAL=1, logs it once; it reports whether the
// release was served.
func (r zipfRelease) check(b *testing.B, logged *bool) bool {
	b.Helper()
	if r.status == http.StatusCreated {
		return true
	}
	if os.Getenv(allowRefusalEnv) != "1" {
		b.Fatalf("release refused with %d (set %s=1 to measure refusals): %.2000s", r.status, allowRefusalEnv, r.problem)
	}
	if !*logged {
		b.Logf("release refused with %d: %.2000s", r.status, r.problem)
		*logged = true
	}
	return false
}

// report adds the release's outcome to the benchmark line, and the
// process's peak RSS since resetPeakRSS where Linux tells it.
func (r zipfRelease) report(b *testing.B) {
	b.ReportMetric(float64(r.status), "status")
	b.ReportMetric(float64(r.reported), "keys")
	if mb, ok := peakRSSMB(); ok {
		b.ReportMetric(mb, "peak-MB")
	}
}

// resetPeakRSS returns freed memory to the operating system and resets the
// process's peak resident set size (Linux: 5 written to
// /proc/self/clear_refs), so the next peakRSSMB covers one sub-benchmark:
// the release(s) it measures plus the benchmark's own baseline (the Go
// runtime, the cached samples).
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMB is VmHWM of /proc/self/status in MB (10^6 bytes); false where
// there is no such file.
func peakRSSMB() (float64, bool) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024 / 1e6, err == nil
		}
	}
	return 0, false
}

// BenchmarkZipfWorkload is issue 22's workload: a client's ppswor sample
// of a Zipf query log (300,000 keys, f_r = floor(10^7/r); package
// workload, seed 1) sent as JSON to POST /v1/samples (release frequencies,
// delta 1e-6) on a server with the default configuration, for eps in
// {1, 0.5, 0.1} x tau in {1e-4, 1e-5, 1e-6} x both methods. Per case:
//
//   - cold: a fresh server per iteration, so every iteration is the first
//     release of its parameters (nothing cached);
//   - warm: one server, one untimed release and the background builds it
//     starts (the chunks its estimate reads), then the timed repeats;
//   - estimate: GET /v1/samples/{id}/estimate (all keys, identity, mle) on
//     the stored sample after one untimed GET; first-get-ms is that first
//     GET, sent as soon as the release is answered (it waits for, or
//     builds, the chunks the estimate reads).
//
// Metrics: status (the HTTP status of the release), keys (reported keys)
// and peak-MB (the benchmark process's peak RSS during the sub-benchmark,
// Linux only; it includes the harness's baseline of a few tens of MB). A refused release fails the benchmark with the problem body,
// unless PWSD_BENCH_ALLOW_REFUSAL=1, which logs it and measures the
// refusal. scripts/bench_zipf.sh runs it cold with -benchtime 1x.
func BenchmarkZipfWorkload(b *testing.B) {
	z := workload.DefaultZipf()
	samples := map[float64][]workload.Element{} // per tau, drawn when first needed
	sample := func(b *testing.B, tau float64) []workload.Element {
		if s, ok := samples[tau]; ok {
			return s
		}
		s, err := z.SamplePPSWOR(tau, 1)
		if err != nil {
			b.Fatal(err)
		}
		samples[tau] = s
		return s
	}
	taus := []struct {
		name string
		tau  float64
	}{{"1e-4", 1e-4}, {"1e-5", 1e-5}, {"1e-6", 1e-6}}
	for _, eps := range []struct {
		name string
		eps  float64
	}{{"1", 1}, {"0.5", 0.5}, {"0.1", 0.1}} {
		for _, tau := range taus {
			for _, method := range []string{"discrete", "max_separation"} {
				name := "eps=" + eps.name + "/tau=" + tau.name + "/method=" + method
				h := workload.Header{Epsilon: eps.eps, Delta: 1e-6, Threshold: tau.tau, Method: method}
				var body []byte
				bodyOf := func(b *testing.B) []byte {
					if body == nil {
						var buf bytes.Buffer
						if err := h.WriteJSON(&buf, sample(b, tau.tau)); err != nil {
							b.Fatal(err)
						}
						body = buf.Bytes()
					}
					return body
				}
				b.Run(name+"/phase=cold", func(b *testing.B) {
					body := bodyOf(b)
					resetPeakRSS()
					var r zipfRelease
					logged := false
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						ts, close, _ := newDefaultServer(b)
						b.StartTimer()
						r = postZipf(b, ts.URL, body)
						b.StopTimer()
						close()
						r.check(b, &logged)
						b.StartTimer()
					}
					r.report(b)
				})
				// released starts a default server for the rest of the
				// sub-benchmark run and sends the case's release once;
				// idle waits for the background builds it started.
				released := func(b *testing.B) (url string, first zipfRelease, served bool, logged *bool, idle func()) {
					body := bodyOf(b)
					resetPeakRSS()
					ts, close, idle := newDefaultServer(b)
					b.Cleanup(close)
					logged = new(bool)
					first = postZipf(b, ts.URL, body)
					return ts.URL, first, first.check(b, logged), logged, idle
				}
				// Warm: the release's tables are built, background
				// builds included.
				b.Run(name+"/phase=warm", func(b *testing.B) {
					url, r, _, logged, idle := released(b)
					idle()
					body := bodyOf(b)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						r = postZipf(b, url, body)
						b.StopTimer()
						r.check(b, logged)
						b.StartTimer()
					}
					r.report(b)
				})
				b.Run(name+"/phase=estimate", func(b *testing.B) {
					base, r, served, logged, idle := released(b)
					if !served {
						b.Skipf("no stored sample to estimate from: the release was refused with %d", r.status)
					}
					url := base + "/v1/samples/" + r.id + "/estimate"
					get := func() {
						res, err := http.Get(url)
						if err != nil {
							b.Fatal(err)
						}
						out, _ := io.ReadAll(res.Body)
						res.Body.Close()
						if res.StatusCode != http.StatusOK {
							b.Fatalf("estimate: status %d: %.2000s", res.StatusCode, out)
						}
					}
					b.ResetTimer()
					get()
					first := b.Elapsed()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						get()
					}
					b.ReportMetric(float64(first.Microseconds())/1e3, "first-get-ms")
					// The same GET after the next day's release of the same
					// parameters: its values are new draws, so its keys' MLE
					// frequencies are not those of the first release.
					b.StopTimer()
					idle()
					again := postZipf(b, base, bodyOf(b))
					again.check(b, logged)
					url = base + "/v1/samples/" + again.id + "/estimate"
					start := time.Now()
					get()
					b.ReportMetric(float64(time.Since(start).Microseconds())/1e3, "next-first-get-ms")
					r.report(b)
				})
			}
		}
	}
}

// TestZipfWorkloadBodies checks that the workload's JSON and NDJSON bodies
// are requests the real router serves (201, reported keys a subset of the
// client's sample), both on the contract-checked test server and on the
// default-configured server BenchmarkZipfWorkload measures. The log is
// small enough to be served today.
func TestZipfWorkloadBodies(t *testing.T) {
	t.Parallel()
	z := workload.Zipf{Keys: 2000, Top: 20_000, Exponent: 1}
	elems, err := z.SamplePPSWOR(1e-3, 1)
	if err != nil {
		t.Fatal(err)
	}
	inSample := make(map[string]bool, len(elems))
	for _, e := range elems {
		inSample[e.Key] = true
	}
	def, closeDef, _ := newDefaultServer(t)
	defer closeDef()
	for _, srv := range []struct {
		name string
		url  string
	}{{"contract", newServer(t, nil).URL}, {"default", def.URL}} {
		for _, method := range []string{"discrete", "max_separation"} {
			h := workload.Header{Epsilon: 1, Delta: 1e-6, Threshold: 1e-3, Method: method}
			var js, nd bytes.Buffer
			if err := h.WriteJSON(&js, elems); err != nil {
				t.Fatal(err)
			}
			if err := h.WriteNDJSON(&nd, elems); err != nil {
				t.Fatal(err)
			}
			for _, body := range []struct {
				ct   string
				body []byte
			}{{"application/json", js.Bytes()}, {"application/x-ndjson", nd.Bytes()}} {
				res, err := http.Post(srv.url+"/v1/samples", body.ct, bytes.NewReader(body.body))
				if err != nil {
					t.Fatal(err)
				}
				out, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusCreated {
					t.Fatalf("%s %s %s: status %d: %s", srv.name, method, body.ct, res.StatusCode, out)
				}
				var v struct {
					Method   string `json:"method"`
					Elements []struct {
						Key string `json:"key"`
					} `json:"elements"`
				}
				if err := json.Unmarshal(out, &v); err != nil {
					t.Fatalf("%s %s %s: %v", srv.name, method, body.ct, err)
				}
				if v.Method != method || len(v.Elements) == 0 || len(v.Elements) > len(elems) {
					t.Errorf("%s %s %s: method %q, %d reported of %d sampled", srv.name, method, body.ct, v.Method, len(v.Elements), len(elems))
				}
				for _, e := range v.Elements {
					if !inSample[e.Key] {
						t.Errorf("%s %s %s: reported key %q is not in the client's sample", srv.name, method, body.ct, e.Key)
					}
				}
			}
		}
	}
}
