package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pwsdload:", err)
		os.Exit(1)
	}
}

type result struct {
	op      string
	latency time.Duration
	status  int
}

// run parses args, drives the server and writes the report to out.
func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("pwsdload", flag.ContinueOnError)
	base := fs.String("url", "http://127.0.0.1:8080", "pwsd base URL (loopback only)")
	clients := fs.Int("clients", 50, "concurrent clients")
	duration := fs.Duration("duration", 30*time.Second, "how long to run")
	maxReq := fs.Int("max-requests", 2_000_000, "stop after this many requests in all")
	elements := fs.Int("elements", 1000, "elements per sanitize request")
	events := fs.Int("events", 1000, "events per stream batch")
	if err := fs.Parse(args); err != nil {
		return err
	}

	u, err := url.Parse(*base)
	if err != nil {
		return err
	}
	if h := u.Hostname(); h != "127.0.0.1" && h != "localhost" && h != "::1" {
		return fmt.Errorf("refusing non-loopback target %q", h)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *clients}}

	// Set-up: one sample to estimate from, one stream to feed.
	sampleID, err := createSample(client, *base, *elements, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return fmt.Errorf("creating the estimate sample: %w", err)
	}
	streamID, err := createStream(client, *base)
	if err != nil {
		return fmt.Errorf("creating the stream: %w", err)
	}

	deadline := time.Now().Add(*duration)
	var mu sync.Mutex
	var results []result
	var budget = make(chan struct{}, *maxReq)
	for i := 0; i < *maxReq; i++ {
		budget <- struct{}{}
	}
	close(budget)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			var local []result
			for range budget {
				if time.Now().After(deadline) {
					break
				}
				var r result
				switch k := rng.IntN(10); {
				case k < 3:
					r = timed("sanitize", func() (int, error) {
						_, st, err := postSample(client, *base, *elements, rng)
						return st, err
					})
				case k < 6:
					r = timed("estimate", func() (int, error) {
						return get(client, *base+"/v1/samples/"+sampleID+"/estimate?estimator=biased_down&key_prefix=k1")
					})
				default:
					r = timed("events", func() (int, error) { return postEvents(client, *base, streamID, *events, rng) })
				}
				local = append(local, r)
			}
			mu.Lock()
			results = append(results, local...)
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	return report(out, results, elapsed, *elements, *events)
}

func timed(op string, f func() (int, error)) result {
	t := time.Now()
	st, err := f()
	if err != nil {
		st = 599
	}
	return result{op: op, latency: time.Since(t), status: st}
}

// report writes the requests' rate and latency per operation to out, and
// fails when any was answered 5xx.
func report(out io.Writer, rs []result, elapsed time.Duration, elements, events int) error {
	byOp := map[string][]time.Duration{}
	fivexx := 0
	other := map[int]int{}
	for _, r := range rs {
		byOp[r.op] = append(byOp[r.op], r.latency)
		if r.status >= 500 {
			fivexx++
		} else if r.status >= 300 {
			other[r.status]++
		}
	}
	fmt.Fprintf(out, "requests %d in %.1fs: %.0f req/s; 5xx: %d; other non-2xx: %v\n", len(rs), elapsed.Seconds(), float64(len(rs))/elapsed.Seconds(), fivexx, other)
	fmt.Fprintf(out, "%-9s %8s %9s %9s %9s %12s\n", "op", "count", "req/s", "p50", "p99", "items/s")
	for _, op := range []string{"sanitize", "estimate", "events"} {
		ls := byOp[op]
		if len(ls) == 0 {
			continue
		}
		slices.Sort(ls)
		items := map[string]int{"sanitize": elements, "estimate": 1, "events": events}[op]
		fmt.Fprintf(out, "%-9s %8d %9.0f %9s %9s %12.0f\n", op, len(ls), float64(len(ls))/elapsed.Seconds(),
			ls[len(ls)/2].Round(10*time.Microsecond), ls[len(ls)*99/100].Round(10*time.Microsecond), float64(len(ls)*items)/elapsed.Seconds())
	}
	if fivexx > 0 {
		return fmt.Errorf("%d requests answered 5xx", fivexx)
	}
	return nil
}

func postSample(c *http.Client, base string, n int, rng *rand.Rand) (string, int, error) {
	var b bytes.Buffer
	b.WriteString(`{"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"ppswor","threshold":0.01},"elements":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		// Zipf-like frequencies.
		f := int(1 / (rng.Float64()*0.999 + 0.001))
		fmt.Fprintf(&b, `{"key":"k%d","frequency":%d}`, i, f)
	}
	b.WriteString("]}")
	res, err := c.Post(base+"/v1/samples", "application/json", &b)
	if err != nil {
		return "", 0, err
	}
	defer res.Body.Close()
	var out struct {
		ID string `json:"id"`
	}
	body, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(body, &out)
	return out.ID, res.StatusCode, nil
}

func createSample(c *http.Client, base string, n int, rng *rand.Rand) (string, error) {
	id, st, err := postSample(c, base, n, rng)
	if err != nil {
		return "", err
	}
	if st != http.StatusCreated {
		return "", fmt.Errorf("status %d", st)
	}
	return id, nil
}

func createStream(c *http.Client, base string) (string, error) {
	res, err := c.Post(base+"/v1/streams", "application/json",
		strings.NewReader(`{"estimator":"density","algorithm":"optbern","epsilon":0.25,"universe_size":1000000,"sample_size":10000,"max_releases":1000}`))
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("status %d: %s", res.StatusCode, body)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

func postEvents(c *http.Client, base, id string, n int, rng *rand.Rand) (int, error) {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "{\"user\":%d}\n", rng.IntN(1_000_000))
	}
	res, err := c.Post(base+"/v1/streams/"+id+"/events", "application/x-ndjson", &b)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

func get(c *http.Client, u string) (int, error) {
	res, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}
