package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

// testRewrite: FormatRewriter rewrites exactly the rows whose JSON format is
// below the one asked for (an absent "format" counts as 0), writes what the
// rewrite function returns, leaves a row untouched when the function fails,
// and finds nothing left to do the second time.
func testRewrite(t *testing.T, s store.Store) {
	rw, ok := s.(store.FormatRewriter)
	if !ok {
		t.Skip("the store does not implement store.FormatRewriter")
	}
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	for id, h := range map[string]string{"old": `{"a":1}`, "v1": `{"format":1,"a":1}`, "new": `{"format":2,"a":1}`} {
		if err := s.CreateSample(ctx, &store.Sample{ID: id, CreatedAt: now, Header: []byte(h), Elements: []store.Element{{Key: "k", Value: 1, Estimate: 1}}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	bump := func(h []byte) ([]byte, error) {
		var m map[string]any
		if err := json.Unmarshal(h, &m); err != nil {
			return nil, err
		}
		m["format"] = 2
		m["rewritten"] = true
		return json.Marshal(m)
	}
	if n, err := rw.RewriteSampleHeaders(ctx, 2, bump); err != nil || n != 2 {
		t.Fatalf("rewrote %d sample headers (%v), want 2", n, err)
	}
	for id, want := range map[string]bool{"old": true, "v1": true, "new": false} {
		smp, err := s.GetSample(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(smp.Header, &m); err != nil {
			t.Fatal(err)
		}
		if (m["rewritten"] == true) != want || m["format"] != float64(2) || len(smp.Elements) != 1 {
			t.Errorf("sample %s after the rewrite: %s, %d elements", id, smp.Header, len(smp.Elements))
		}
	}
	if n, err := rw.RewriteSampleHeaders(ctx, 2, bump); err != nil || n != 0 {
		t.Errorf("second rewrite: %d (%v), want 0", n, err)
	}

	for id, c := range map[string]string{"old": `{"a":1}`, "new": `{"format":2}`} {
		if err := s.CreateState(ctx, &store.StateRecord{Kind: "stream", ID: id, Config: []byte(c), State: []byte{1}, Events: 9, CreatedAt: now, UpdatedAt: now}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateState(ctx, &store.StateRecord{Kind: "counter", ID: "old", Config: []byte(`{}`), State: []byte{1}, Events: 3, CreatedAt: now, UpdatedAt: now}, nil); err != nil {
		t.Fatal(err)
	}
	failing := errors.New("undecodable")
	if _, err := rw.RewriteStates(ctx, "stream", 2, func(*store.StateRecord) error { return failing }); !errors.Is(err, failing) {
		t.Fatalf("failing rewrite: %v", err)
	}
	if got, _ := s.GetState(ctx, "stream", "old"); string(got.Config) != `{"a": 1}` && string(got.Config) != `{"a":1}` {
		t.Fatalf("failed rewrite wrote %s", got.Config)
	}
	n, err := rw.RewriteStates(ctx, "stream", 2, func(r *store.StateRecord) error {
		r.Config, r.State, r.Events = []byte(`{"format":2}`), []byte{2, 2}, 0
		return nil
	})
	if err != nil || n != 1 {
		t.Fatalf("rewrote %d streams (%v), want 1", n, err)
	}
	got, err := s.GetState(ctx, "stream", "old")
	if err != nil || string(got.State) != "\x02\x02" || got.Events != 0 {
		t.Errorf("stream after the rewrite: %+v %v", got, err)
	}
	if c, _ := s.GetState(ctx, "counter", "old"); c.Events != 3 || string(c.State) != "\x01" {
		t.Errorf("rewriting streams touched a counter: %+v", c)
	}
	if n, err := rw.RewriteStates(ctx, "stream", 2, func(*store.StateRecord) error { return failing }); err != nil || n != 0 {
		t.Errorf("second rewrite: %d (%v), want 0", n, err)
	}
}
