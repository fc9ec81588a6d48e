package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/pgtest"
)

// zipfNDJSON is a sample request of n elements with Zipf(1)-like frequencies.
func zipfNDJSON(n int, header string) []byte {
	var b bytes.Buffer
	b.WriteString(header + "\n")
	rng := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(rng, 1.1, 1, 1<<20)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "{\"key\":\"key-%d\",\"frequency\":%d}\n", i, z.Uint64()+1)
	}
	return b.Bytes()
}

func post(b *testing.B, url, ct string, body []byte, accept string) []byte {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		b.Fatalf("status %d: %.300s", res.StatusCode, out)
	}
	return out
}

// BenchmarkSanitizeNDJSON1M: 10^6 elements streamed in and out over real
// HTTP (loopback), sanitized (ppswor, Algorithm 5), stored in memory.
func BenchmarkSanitizeNDJSON1M(b *testing.B) {
	ts := newServer(b, nil)
	body := zipfNDJSON(1_000_000, `{"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"ppswor","threshold":0.01}}`)
	post(b, ts.URL+"/v1/samples", "application/x-ndjson", body, "application/x-ndjson") // warm the tables
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		post(b, ts.URL+"/v1/samples", "application/x-ndjson", body, "application/x-ndjson")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/1M-elements")
}

// scriptNDJSON is the request scripts/bench_http.sh sends: n elements with
// P(frequency >= k) about 1/k, capped at 2^20 (about 5% are reported).
func scriptNDJSON(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"ppswor","threshold":0.01}}` + "\n")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "{\"key\":\"key-%d\",\"frequency\":%d}\n", i, min(1<<20, int(1/(rng.Float64()*0.999999+1e-6))))
	}
	return b.Bytes()
}

// BenchmarkSanitizeNDJSON1MScript: the workload of scripts/bench_http.sh
// (10^6 elements, about 5% reported) in process over loopback HTTP, warm
// tables; the answer is read and discarded.
func BenchmarkSanitizeNDJSON1MScript(b *testing.B) {
	ts := newServer(b, nil)
	body := scriptNDJSON(1_000_000)
	send := func() {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/samples", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Accept", "application/x-ndjson")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		if _, err := io.Copy(io.Discard, res.Body); err != nil || res.StatusCode != http.StatusCreated {
			b.Fatalf("status %d, %v", res.StatusCode, err)
		}
	}
	send() // warm the tables
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/1M-elements")
}

// BenchmarkEstimateStoredSample1M: a prefix-sum estimate over a stored
// sample of 10^6 reported keys (scheme none, delta large: all reported).
func BenchmarkEstimateStoredSample1M(b *testing.B) {
	ts := newServer(b, nil)
	body := zipfNDJSON(1_000_000, `{"privacy":{"epsilon":1,"delta":0.5},"sampling":{"scheme":"none"}}`)
	out := post(b, ts.URL+"/v1/samples", "application/x-ndjson", body, "application/x-ndjson")
	id := string(out[strings.Index(string(out), `"id":"`)+6:][:32])
	for _, est := range []string{"mle", "biased_down"} {
		b.Run(est, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				res, err := http.Get(ts.URL + "/v1/samples/" + id + "/estimate?estimator=" + est + "&key_prefix=key-1")
				if err != nil || res.StatusCode != 200 {
					b.Fatalf("%v %v", err, res.StatusCode)
				}
				res.Body.Close()
			}
		})
	}
}

// BenchmarkStreamIngestPostgres: NDJSON event batches of 10^4 into an
// OptBern density stream backed by PostgreSQL; reports events/s.
func BenchmarkStreamIngestPostgres(b *testing.B) {
	if os.Getenv(pgtest.EnvURL) == "" {
		b.Skip("needs PWSD_TEST_DATABASE_URL")
	}
	p, err := store.OpenPostgres(context.Background(), pgtest.NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ts := newServer(b, p)
	out := post(b, ts.URL+"/v1/streams", "application/json", []byte(`{"estimator":"density","algorithm":"optbern","epsilon":0.25,"universe_size":100000,"sample_size":1000}`), "")
	id := string(out[strings.Index(string(out), `"id":"`)+6:][:32])
	var batch bytes.Buffer
	for i := 0; i < 10_000; i++ {
		fmt.Fprintf(&batch, "{\"user\":%d}\n", (i*7919)%100000)
	}
	body := batch.Bytes()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		post(b, ts.URL+"/v1/streams/"+id+"/events", "application/x-ndjson", body, "")
	}
	b.ReportMetric(float64(b.N*10_000)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkCounterStepsHTTP: batches of 1000 bits per request, per algorithm.
func BenchmarkCounterStepsHTTP(b *testing.B) {
	ts := newServer(b, nil)
	bits := "[" + strings.TrimSuffix(strings.Repeat("1,0,", 500), ",") + "]"
	for _, alg := range []string{"simple", "randomized_response", "cascading", "tree"} {
		b.Run(alg, func(b *testing.B) {
			out := post(b, ts.URL+"/v1/counters", "application/json", []byte(`{"epsilon":1,"horizon":1000000000,"algorithm":"`+alg+`"}`), "")
			id := string(out[strings.Index(string(out), `"id":"`)+6:][:32])
			for i := 0; i < b.N; i++ {
				post(b, ts.URL+"/v1/counters/"+id+"/steps", "application/json", []byte(`{"bits":`+bits+`}`), "")
			}
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}
