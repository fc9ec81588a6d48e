package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pwsd/pwsd/internal/store/pgtest"
)

// pgDump returns a plain-SQL dump of the database at url.
func pgDump(t *testing.T, url string) []byte {
	t.Helper()
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
		if len(matches) == 0 {
			t.Fatal("pg_dump not found")
		}
		bin = matches[len(matches)-1]
	}
	out, err := exec.Command(bin, "--data-only", "--inserts", url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	return out
}

// TestNothingRawAtRest: unreported keys and stream user ids carrying a
// marker are posted; the marker appears neither in a pg_dump of the database
// nor in pwsd's logs.
func TestNothingRawAtRest(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	p := start(t, buildBinary(t), "PWSD_DATABASE_URL="+dbURL, "PWSD_LOG_LEVEL=debug")
	const marker = "RAWMARKER5521"
	var b strings.Builder
	// delta = 1e-12: pi_1 ~ 1e-12, so frequency-1 keys are (all but surely) not reported.
	b.WriteString(`{"privacy":{"epsilon":0.5,"delta":1e-12},"sampling":{"scheme":"none"},"elements":[`)
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, `{"key":"%s-%d","frequency":1},`, marker, i)
	}
	b.WriteString(`{"key":"visible","frequency":100000}]}`)
	st, body := httpDo(t, "POST", p.url("/v1/samples"), "application/json", b.String())
	if st != 201 || strings.Contains(string(body), marker) {
		t.Fatalf("sample: %d %.300s", st, body)
	}
	st, body = httpDo(t, "POST", p.url("/v1/streams"), "application/json", `{"estimator":"density","epsilon":0.25,"universe_size":100000,"sample_size":1000}`)
	if st != 201 {
		t.Fatalf("stream: %d %s", st, body)
	}
	var sv struct{ ID string }
	_ = json.Unmarshal(body, &sv)
	var ev strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&ev, "{\"user\":\"%s-user-%d\"}\n", marker, i)
	}
	if st, body := httpDo(t, "POST", p.url("/v1/streams/"+sv.ID+"/events"), "application/x-ndjson", ev.String()); st != 200 {
		t.Fatalf("events: %d %s", st, body)
	}
	httpDo(t, "POST", p.url("/v1/streams/"+sv.ID+"/releases"), "", "")
	httpDo(t, "GET", p.url("/v1/tables/reporting?epsilon=0.5&delta=1e-12&max_frequency=50"), "", "")

	dump := pgDump(t, dbURL)
	// bytea columns are dumped in hex: look for both spellings.
	contains := func(s string) bool {
		return bytes.Contains(dump, []byte(s)) || bytes.Contains(dump, []byte(hex.EncodeToString([]byte(s))))
	}
	if !contains("visible") {
		t.Fatal("the dump should hold the reported key (sanity check of the grep)")
	}
	if contains(marker) {
		t.Fatal("a raw key or user id is at rest in the database")
	}
	if strings.Contains(p.logs.String(), marker) {
		t.Fatal("a raw key or user id reached the logs")
	}
}

// TestNothingAcknowledgedIsLost: stream events and counter steps acknowledged
// before a SIGKILL are all applied after a restart on the same database, and
// no counter step twice. Streams keep no event count (it is what they
// protect), so their batches are checked through the state an announced
// intrusion reveals: with OptBern at epsilon 0.5 and every user sampled, a
// user's bit is 1 with probability 0.6225 after an event and 0.3775
// without, so a batch of 1000 distinct users has at least 500 ones if it was
// applied and fewer if not, except with probability below 1e-14 per batch
// (Hoeffding: exp(-2*1000*0.1225^2)). Unsent batches serve as the control.
func TestNothingAcknowledgedIsLost(t *testing.T) {
	// Serial: clients with a 5 s timeout race a kill 1.5 s in; parallel load could leave nothing acknowledged.
	dbURL := pgtest.NewDatabase(t)
	bin := buildBinary(t)
	p := start(t, bin, "PWSD_DATABASE_URL="+dbURL)
	_, body := httpDo(t, "POST", p.url("/v1/streams"), "application/json", `{"estimator":"density","algorithm":"optbern","epsilon":0.5,"universe_size":1048576,"sample_size":1048576}`)
	var sv struct{ ID string }
	_ = json.Unmarshal(body, &sv)
	_, body = httpDo(t, "POST", p.url("/v1/counters"), "application/json", `{"epsilon":1,"horizon":100000,"algorithm":"tree"}`)
	var cv struct{ ID string }
	_ = json.Unmarshal(body, &cv)
	if sv.ID == "" || cv.ID == "" {
		t.Fatal("set-up failed")
	}
	batch := func(n, off int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "{\"user\":%d}\n", off+i)
		}
		return b.String()
	}
	const batchSize, perWorker = 1000, 1 << 19
	var mu sync.Mutex
	ackedEvents, ackedSteps := 0, 0
	var ackedBatches []int // first user of each acknowledged batch
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			client := &http.Client{Timeout: 5 * time.Second}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if w%2 == 0 {
					off := (w/2)*perWorker + i*batchSize
					if off+batchSize > (w/2+1)*perWorker-batchSize { // keep the last batch unsent: a control
						return
					}
					res, err := client.Post(p.url("/v1/streams/"+sv.ID+"/events"), "application/x-ndjson", strings.NewReader(batch(batchSize, off)))
					if err != nil {
						return
					}
					res.Body.Close()
					if res.StatusCode == 200 {
						mu.Lock()
						ackedEvents += batchSize
						ackedBatches = append(ackedBatches, off)
						mu.Unlock()
					}
				} else {
					res, err := client.Post(p.url("/v1/counters/"+cv.ID+"/steps"), "application/json", strings.NewReader(`{"bits":[1,0,1,1,0]}`))
					if err != nil {
						return
					}
					res.Body.Close()
					if res.StatusCode == 200 {
						mu.Lock()
						ackedSteps += 5
						mu.Unlock()
					}
				}
			}
		}(w)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	ae, as := ackedEvents, ackedSteps
	mu.Unlock()
	if ae == 0 || as == 0 {
		t.Fatalf("nothing was acknowledged before the kill (%d events, %d steps)", ae, as)
	}

	q := start(t, bin, "PWSD_DATABASE_URL="+dbURL)
	_, body = httpDo(t, "POST", q.url("/v1/streams/"+sv.ID+"/intrusions"), "", "")
	var got struct {
		Users []int  `json:"users"`
		Bits  string `json:"bits"`
	}
	if err := json.Unmarshal(body, &got); err != nil || len(got.Users) != len(got.Bits) {
		t.Fatalf("intrusion: %v %.200s", err, body)
	}
	bit := make(map[int]bool, len(got.Users))
	for i, u := range got.Users {
		bit[u] = got.Bits[i] == '1'
	}
	ones := func(off int) int {
		n := 0
		for u := off; u < off+batchSize; u++ {
			if bit[u] {
				n++
			}
		}
		return n
	}
	mu.Lock()
	batches := append([]int(nil), ackedBatches...)
	mu.Unlock()
	for _, off := range batches {
		if n := ones(off); n < batchSize/2 {
			t.Fatalf("acknowledged batch at user %d shows %d ones of %d: not applied", off, n, batchSize)
		}
	}
	// The stored record carries no event count either (defect 4).
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	var storedEvents int64
	err = conn.QueryRow(context.Background(), `SELECT events FROM states WHERE kind = 'stream' AND id = $1`, sv.ID).Scan(&storedEvents)
	conn.Close(context.Background())
	if err != nil || storedEvents != 0 {
		t.Fatalf("states.events = %d (%v), want 0: the exact count is at rest", storedEvents, err)
	}
	for _, off := range []int{perWorker - batchSize, 2*perWorker - batchSize} { // never sent
		if n := ones(off); n >= batchSize/2 {
			t.Fatalf("unsent batch at user %d shows %d ones: the check cannot tell", off, n)
		}
	}
	_, body = httpDo(t, "GET", q.url("/v1/counters/"+cv.ID), "", "")
	var gc struct{ Steps int }
	_ = json.Unmarshal(body, &gc)
	if gc.Steps < as || gc.Steps > as+2*5 || gc.Steps%5 != 0 {
		t.Fatalf("counter has %d steps after restart; %d were acknowledged", gc.Steps, as)
	}
	t.Logf("acknowledged %d events (%d batches, all found applied) and %d steps before SIGKILL; found %d steps after restart", ae, len(batches), as, gc.Steps)
}

// TestGracefulShutdownDrains: a request in flight when SIGTERM arrives
// completes with its normal answer.
func TestGracefulShutdownDrains(t *testing.T) {
	t.Parallel() // mostly waiting on timeouts: overlaps the CPU-bound tests
	p := start(t, buildBinary(t))
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", p.url("/v1/samples"), pr)
		req.Header.Set("Content-Type", "application/x-ndjson")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		res.Body.Close()
		done <- res.StatusCode
	}()
	fmt.Fprintln(pw, `{"privacy":{"epsilon":1,"delta":0.001},"sampling":{"scheme":"none"}}`)
	fmt.Fprintln(pw, `{"key":"a","frequency":10}`)
	time.Sleep(200 * time.Millisecond) // the request is now in flight
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintln(pw, `{"key":"b","frequency":20}`)
	pw.Close()
	select {
	case st := <-done:
		if st != 201 {
			t.Fatalf("in-flight request got %d during shutdown", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight request did not complete")
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pwsd did not exit")
	}
	_ = os.Stdout
}
