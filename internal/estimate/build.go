package estimate

import (
	"context"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// RowSource streams the rows of a frequency sanitizer (Algorithm 4 or 5) in
// ascending frequency order: fn receives rows from, from+1, ..., to and may
// stop the stream by returning false. Row i's pieces must lie in (0, i], be
// sorted and disjoint, and sum to Pi; the lower end of the support must be
// non-decreasing in i (true for both algorithms: a row never puts mass below
// the previous row's support). fn must not retain row.Pieces. A source that
// delivers fewer rows than asked for (and no error) is treated as complete:
// no higher frequencies exist. *sanitize.Table satisfies RowSource.
type RowSource interface {
	Rows(from, to int64, fn func(sanitize.Row) bool) error
}

// Stationary is implemented by sources that know where their rows become
// shifted copies (q_i = 1): row i = row s shifted by i - s for all i >= s.
// Build then records a Tail so that estimates continue beyond MaxFrequency.
// Build asks only when the rows it read end in a run of shifted copies that
// starts at or below MaxFrequency, and fails if the claim contradicts them.
type Stationary interface {
	StationaryFrom() (int64, bool)
}

// maxLookahead bounds how many rows beyond MaxFrequency Build reads while
// waiting for row supports to move past MaxFrequency.
const maxLookahead = 1 << 22

// relTol is the relative tolerance on token positions: break points closer
// than relTol*max(1,|x|) are the same break point (rounding of the same
// point computed along different routes), and overlaps shorter than that
// are empty.
const relTol = 1e-12

func tol(x float64) float64 {
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return relTol
	}
	return relTol * x
}

// Build computes the estimator table of spec from a row source, streaming:
// rows are read once, in order, with a sliding window of the rows whose
// support contains the current token; each row touches only its own window
// of tokens, and per row only running prefix sums are kept (eq. 41's
// sum_{h<j} a_h pi_{i,h} and the remaining mass). Time O(n L), memory O(n)
// for the tokens, estimates and statistics plus O(L^2) for the window.
//
// Estimates for tokens near n depend on rows above n (eq. 11's argmax and
// eq. 41's minimum run over every frequency that can produce the token), so
// Build reads rows until their supports start beyond n.
//
// The unbiased estimator is the triangular solve on unit cells: it is
// constant on each (k-1, k] and row k's equation fixes cell k. For
// Algorithm 4 cells are tokens; for Algorithm 5 it is one unbiased choice
// among many (Algorithm 5 has more tokens than frequencies).
func Build(src RowSource, spec Spec) (*Table, error) {
	return BuildContext(context.Background(), src, spec)
}

// BuildContext is Build that stops, with ctx's error, soon after ctx is
// cancelled (it checks every ctxEvery rows). It is Open asked for the table.
func BuildContext(ctx context.Context, src RowSource, spec Spec) (*Table, error) {
	out, err := Open(ctx, src, Ask{Table: &spec})
	if err != nil {
		return nil, err
	}
	return out.Table, nil
}

// methodOf is the sanitizer of a source that tells it (sanitize.Table
// does), "" otherwise.
func methodOf(src RowSource) sanitize.Method {
	if ms, ok := src.(interface{ Method() sanitize.Method }); ok {
		return ms.Method()
	}
	return ""
}

// mostlyStationary reports whether most rows up to n can be stationary
// copies: q_i is constant from n/2 on at the latest. The dense Algorithm
// 5 builder (buildGrid) pays off there, where copies share their masses;
// on rows that all differ its dense rows cost about what the general
// builder's pieces do, with more of the work on the row goroutine, which
// also computes the sanitizer rows.
func mostlyStationary(src RowSource, n int64) bool {
	cq, ok := src.(interface{ ConstantQFrom() (int64, bool) })
	if !ok {
		return true
	}
	from, ok := cq.ConstantQFrom()
	return ok && from <= n/2
}
