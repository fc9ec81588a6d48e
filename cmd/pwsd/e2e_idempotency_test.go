package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pwsd/pwsd/internal/store/pgtest"
)

// keyedPost sends a POST with an Idempotency-Key and returns the answer.
func keyedPost(t *testing.T, url, ct, body, key string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Idempotency-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// TestIdempotencySurvivesKill: a keyed sample release is answered, the
// server is killed with SIGKILL (no shutdown), a new server on the same
// PostgreSQL database gets the duplicate and answers the first answer again
// (status, Location, body) without charging: the dataset's ledger holds
// one release. Neither the raw key nor the request body is stored.
func TestIdempotencySurvivesKill(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	bin := buildBinary(t)
	p := start(t, bin, "PWSD_DATABASE_URL="+dbURL)
	if st, b := httpDo(t, "POST", p.url("/v1/datasets"), "application/json", `{"name":"kill9","epsilon_budget":1,"delta_budget":0.001}`); st != 201 {
		t.Fatalf("dataset: %d %s", st, b)
	}
	var body strings.Builder
	body.WriteString(`{"dataset":"kill9","privacy":{"epsilon":0.4,"delta":0.0001},"sampling":{"scheme":"none"}}` + "\n")
	for i := 0; i < 2000; i++ {
		body.WriteString(`{"key":"RAWKEY-` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `-` + time.Duration(i).String() + `","frequency":` + "40" + "}\n")
	}
	const key = "e2e-kill9-RAW-IDEMPOTENCY-KEY"
	first, firstBody := keyedPost(t, p.url("/v1/samples"), "application/x-ndjson", body.String(), key)
	if first.StatusCode != 201 {
		t.Fatalf("first: %d %s", first.StatusCode, firstBody)
	}

	if err := p.cmd.Process.Kill(); err != nil { // SIGKILL: no graceful anything
		t.Fatal(err)
	}
	p.done <- <-p.done // keep the exit for the cleanup

	q := start(t, bin, "PWSD_DATABASE_URL="+dbURL)
	second, secondBody := keyedPost(t, q.url("/v1/samples"), "application/x-ndjson", body.String(), key)
	if second.StatusCode != first.StatusCode || !bytes.Equal(secondBody, firstBody) ||
		second.Header.Get("Location") != first.Header.Get("Location") || second.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after kill -9 the duplicate got %d %q (replayed %q), want the first answer %d %q",
			second.StatusCode, second.Header.Get("Location"), second.Header.Get("Idempotent-Replayed"), first.StatusCode, first.Header.Get("Location"))
	}
	st, b := httpDo(t, "GET", q.url("/v1/datasets/kill9"), "", "")
	var d struct {
		SpentBasic struct{ Epsilon float64 } `json:"spent_basic"`
		Releases   []struct{ Ref string }
	}
	if err := json.Unmarshal(b, &d); err != nil || st != 200 {
		t.Fatalf("dataset: %d %s", st, b)
	}
	if len(d.Releases) != 1 || d.SpentBasic.Epsilon != 0.4 {
		t.Fatalf("the dataset was charged %d times (spent %g by basic composition), want once", len(d.Releases), d.SpentBasic.Epsilon)
	}
	// The same key with another body is refused and charges nothing.
	other, ob := keyedPost(t, q.url("/v1/samples"), "application/x-ndjson", strings.Replace(body.String(), `"frequency":40`, `"frequency":41`, 1), key)
	if other.StatusCode != 422 {
		t.Fatalf("reused key, other body: %d %s", other.StatusCode, ob)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	var keys []string
	var stored []byte
	if err := conn.QueryRow(ctx, `SELECT count(*), array_agg(key), (array_agg(body))[1] FROM idempotency_keys`).Scan(&n, &keys, &stored); err != nil {
		t.Fatal(err)
	}
	// One row, keyed by a digest, holding exactly the answer sent.
	if n != 1 || strings.Contains(keys[0], "RAW") || len(keys[0]) != 64 || !bytes.Equal(stored, firstBody) {
		t.Fatalf("idempotency_keys holds %d rows, key %q, body equal to the answer: %v", n, keys[0], bytes.Equal(stored, firstBody))
	}
}

// TestRetryAfterKillAnsweredPromptly: a keyed release whose server is
// killed with SIGKILL while it runs (its upload half sent) leaves a
// reservation nobody renews; a retry on a new server is answered 409
// "interrupted" once its lease (8 s) lapses, not 409 "in progress" after
// the request timeout and a 90 s lease as before (issue 25, defect 5), and
// charges nothing. The answer tells the two apart; the clock is only logged.
func TestRetryAfterKillAnsweredPromptly(t *testing.T) {
	// Serial: a 500 ms sleep must see the key reserved before the kill.
	dbURL := pgtest.NewDatabase(t)
	bin := buildBinary(t)
	p := start(t, bin, "PWSD_DATABASE_URL="+dbURL)
	if st, b := httpDo(t, "POST", p.url("/v1/datasets"), "application/json", `{"name":"k9","epsilon_budget":1,"delta_budget":0.001}`); st != 201 {
		t.Fatalf("dataset: %d %s", st, b)
	}
	body := `{"dataset":"k9","privacy":{"epsilon":0.4,"delta":0.0001},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":40}]}`
	conn, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/samples HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: dies\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:20])
	time.Sleep(500 * time.Millisecond) // the key is reserved and the request reads its body
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.done <- <-p.done

	q := start(t, bin, "PWSD_DATABASE_URL="+dbURL)
	begin := time.Now()
	res, b := keyedPost(t, q.url("/v1/samples"), "application/json", body, "dies")
	took := time.Since(begin)
	if res.StatusCode != 409 || !strings.Contains(string(b), "interrupted") {
		t.Fatalf("retry after kill -9: %d %s", res.StatusCode, b)
	}
	t.Logf("retry after kill -9 answered 409 interrupted in %v", took)
	if st, b := httpDo(t, "GET", q.url("/v1/datasets/k9"), "", ""); st != 200 || strings.Contains(string(b), `"kind":"sample"`) {
		t.Fatalf("the dataset after an interrupted release: %d %s", st, b)
	}
}
