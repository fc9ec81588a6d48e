package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pwsd/pwsd/internal/store"
)

// countingSource yields elements key-0, key-1, ... of frequency 3; at index
// failAt (if >= 0) it returns errAt, and at panicAt it panics. It records
// calls made after *returned is set.
func countingSource(n, failAt, panicAt int, errAt error, returned *atomic.Bool, late *atomic.Int64) ElementSource {
	i := 0
	return func() (string, int64, error) {
		if returned.Load() {
			late.Add(1)
		}
		if i == n {
			return "", 0, io.EOF
		}
		if i == failAt {
			return "", 0, errAt
		}
		if i == panicAt {
			panic("source panic")
		}
		i++
		return fmt.Sprintf("key-%d", i-1), 3, nil
	}
}

// CreateSample reads its source one batch ahead on another goroutine, yet
// it meets errors in input order exactly as a sequential loop would (a
// limit at element k wins over a source error after k, a source error wins
// over a later repeat), never calls the source after it returns, and raises
// a source's panic on the caller's goroutine.
func TestCreateSampleReadAhead(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t, "", 1)
	errSrc := errors.New("bad element")
	for _, tc := range []struct {
		name        string
		n, failAt   int
		maxElements int
		want        string // substring of the error; "" means success
	}{
		{"all read", 3*readAheadBatch + 17, -1, 1 << 20, ""},
		{"limit before the source error", 20000, 15000, 5000, "at most 5000 elements"},
		{"source error before the limit", 20000, 4000, 5000, "bad element"},
		{"source error in the first batch", 20000, 7, 1 << 20, "bad element"},
		{"limit at a batch boundary", readAheadBatch + 1, -1, readAheadBatch, "at most 4096 elements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var returned atomic.Bool
			var late atomic.Int64
			smp, err := s.Samples.Create(context.Background(), spec, tc.maxElements, countingSource(tc.n, tc.failAt, -1, errSrc, &returned, &late))
			returned.Store(true)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want == "" && smp.Reported != tc.n: // delta 1, no sampling: all reported
				t.Fatalf("reported %d of %d", smp.Reported, tc.n)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if late.Load() != 0 {
				t.Fatalf("the source was called %d times after CreateSample returned", late.Load())
			}
		})
	}
	t.Run("source panic", func(t *testing.T) {
		var returned atomic.Bool
		var late atomic.Int64
		defer func() {
			p := recover()
			if p == nil || !strings.Contains(fmt.Sprint(p), "source panic") {
				t.Fatalf("recovered %v, want the source's panic", p)
			}
		}()
		s.Samples.Create(context.Background(), spec, 1<<20, countingSource(10000, -1, 5000, nil, &returned, &late))
	})
}
