package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkIdempotencyOverhead: a 10^5-element NDJSON sample release
// (ppswor, Algorithm 5, in-memory store) without a key, with a fresh key per
// request (hash the body, record the answer), and a replay of one key (hash
// the body, send the recorded answer).
func BenchmarkIdempotencyOverhead(b *testing.B) {
	ts := newServer(b, nil)
	body := zipfNDJSON(100_000, `{"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"ppswor","threshold":0.01}}`)
	send := func(b *testing.B, key string) {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/samples", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/x-ndjson")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != http.StatusCreated {
			b.Fatalf("%v %v", err, res.StatusCode)
		}
		res.Body.Close()
	}
	send(b, "") // warm the tables
	for _, mode := range []string{"no key", "fresh key", "replay"} {
		b.Run(strings.ReplaceAll(mode, " ", "_"), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for i := 0; i < b.N; i++ {
				switch mode {
				case "no key":
					send(b, "")
				case "fresh key":
					send(b, fmt.Sprint("fresh-", b.N, "-", i))
				default:
					send(b, "the-same-key")
				}
			}
		})
	}
}

// BenchmarkListSamples: one page of 100 out of 10^4 stored samples.
func BenchmarkListSamples(b *testing.B) {
	ts := newServer(b, nil)
	body := []byte(`{"privacy":{"epsilon":1,"delta":0.5},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":3}]}`)
	for i := 0; i < 10_000; i++ {
		post(b, ts.URL+"/v1/samples", "application/json", body, "")
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := http.Get(ts.URL + "/v1/samples?limit=100")
		if err != nil || res.StatusCode != 200 {
			b.Fatal(err)
		}
		res.Body.Close()
	}
}
