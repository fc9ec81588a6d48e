package service

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/pwsd/pwsd/internal/accounting"
	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/store"
)

// Page limits of every listing.
const (
	defaultPageLimit = 100
	MaxPageLimit     = 1000
)

// Page asks for one page of a listing: up to Limit items (0 means
// defaultPageLimit) after Cursor, an opaque string from an earlier page's
// next cursor ("" for the first page).
type Page struct {
	Limit  int
	Cursor string
}

// cursor prefixes tie a cursor to the listing that issued it.
const (
	cursorSamples  = "s"
	cursorDatasets = "d"
	cursorStreams  = "t"
	cursorCounters = "c"
	cursorElements = "e"
)

// encodeCursor makes an opaque cursor for the position (t, id) of listing kind.
func encodeCursor(kind string, t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "." + strconv.FormatInt(t.UnixNano(), 10) + "." + id))
}

// errCursor is the answer to a cursor this server did not issue for the listing.
func errCursor() error { return fieldErr("cursor", CursorReason) }

// CursorReason is the reason of every refused cursor, forged, tampered or
// from another listing (the API refuses malformed ones before they reach
// the service with the same words).
const CursorReason = "is not a cursor this listing issued; pass next_cursor from the previous page as it is"

// decodeCursor reads a cursor of listing kind.
func decodeCursor(kind, s string) (store.Cursor, error) {
	if s == "" {
		return store.Cursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return store.Cursor{}, errCursor()
	}
	k, rest, ok1 := strings.Cut(string(b), ".")
	ns, id, ok2 := strings.Cut(rest, ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok1 || !ok2 || k != kind || err != nil || !checks.Identifier(id) {
		return store.Cursor{}, errCursor()
	}
	return store.Cursor{CreatedAt: time.Unix(0, n).UTC(), ID: id}, nil
}

// limit validates p.Limit.
func (p Page) limit() (int, error) {
	switch {
	case p.Limit == 0:
		return defaultPageLimit, nil
	case p.Limit < 1 || p.Limit > MaxPageLimit:
		return 0, fieldErr("limit", "must be an integer from 1 to %d", MaxPageLimit)
	}
	return p.Limit, nil
}

// pageOf runs a store listing for p, asking one item more than the limit to
// learn whether a next page exists; it returns the page and the next cursor
// ("" on the last page).
func pageOf[T any](p Page, kind string, list func(c store.Cursor, limit int) ([]T, error), pos func(T) (time.Time, string)) ([]T, string, error) {
	limit, err := p.limit()
	if err != nil {
		return nil, "", err
	}
	c, err := decodeCursor(kind, p.Cursor)
	if err != nil {
		return nil, "", err
	}
	items, err := list(c, limit+1)
	if err != nil {
		return nil, "", err
	}
	if len(items) <= limit {
		return items, "", nil
	}
	items = items[:limit]
	t, id := pos(items[limit-1])
	return items, encodeCursor(kind, t, id), nil
}

// ListSamples lists stored samples without their elements (Elements nil,
// Reported set), oldest first.
func (s *Samples) List(ctx context.Context, p Page) ([]*Sample, string, error) {
	rows, next, err := pageOf(p, cursorSamples, func(c store.Cursor, n int) ([]*store.Sample, error) { return s.store.ListSamples(ctx, c, n) },
		func(x *store.Sample) (time.Time, string) { return x.CreatedAt, x.ID })
	if err != nil {
		return nil, "", storeErr(err, "listing samples")
	}
	out := make([]*Sample, len(rows))
	for i, r := range rows {
		if out[i], err = sampleOf(r); err != nil {
			return nil, "", err
		}
	}
	return out, next, nil
}

// DeleteSample deletes a sample; its dataset's ledger keeps the charge.
func (s *Samples) Delete(ctx context.Context, id string) error {
	if scoped(ctx) {
		smp, err := s.store.GetSample(ctx, id)
		if err != nil {
			return storeErr(err, "deleting sample")
		}
		if err := inScope(ctx, "id", smp.Dataset); err != nil {
			return err
		}
	}
	return storeErr(s.store.DeleteSample(ctx, id), "deleting sample")
}

// PageElements returns one page of smp's elements in their stored order and
// the cursor of the next page ("" on the last). Cursors of one sample do
// not work on another.
func PageElements(smp *Sample, p Page) (*Sample, string, error) {
	limit, err := p.limit()
	if err != nil {
		return nil, "", err
	}
	start := 0
	if p.Cursor != "" {
		c, err := decodeCursor(cursorElements, p.Cursor)
		if err != nil || c.ID != smp.ID || c.CreatedAt.UnixNano() < 0 || c.CreatedAt.UnixNano() > int64(len(smp.Elements)) {
			return nil, "", errCursor()
		}
		start = int(c.CreatedAt.UnixNano())
	}
	end := min(start+limit, len(smp.Elements))
	next := ""
	if end < len(smp.Elements) {
		next = encodeCursor(cursorElements, time.Unix(0, int64(end)), smp.ID)
	}
	pg := *smp
	pg.Elements = smp.Elements[start:end]
	if len(smp.Keys) == len(smp.Elements) {
		pg.Keys = smp.Keys[start:end]
	}
	return &pg, next, nil
}

// ListDatasets lists datasets with their ledgers, oldest first.
func (s *Datasets) List(ctx context.Context, p Page) ([]Dataset, string, error) {
	type row struct {
		d   store.Dataset
		rel []store.Release
	}
	rows, next, err := pageOf(p, cursorDatasets, func(c store.Cursor, n int) ([]row, error) {
		ds, rel, err := s.store.ListDatasets(ctx, c, n)
		out := make([]row, len(ds))
		for i := range ds {
			out[i] = row{ds[i], rel[i]}
		}
		return out, err
	}, func(r row) (time.Time, string) { return r.d.CreatedAt, r.d.Name })
	if err != nil {
		return nil, "", storeErr(err, "listing datasets")
	}
	out := make([]Dataset, len(rows))
	for i, r := range rows {
		out[i] = datasetOf(r.d, r.rel)
		if err := s.compose(ctx, &out[i]); err != nil {
			return nil, "", err
		}
	}
	return out, next, nil
}

// compose sets d.ComposedEpsilon for a PLD dataset from its composed ledger
// (the store's cache extended by the releases recorded since).
func (s *Datasets) compose(ctx context.Context, d *Dataset) error {
	if d.Accounting != store.AccountingPLD {
		return nil
	}
	pld, err := s.store.ComposedLedger(ctx, d.Name)
	if err != nil {
		return storeErr(err, "composing the ledger")
	}
	d.ComposedEpsilon = accounting.Spent(pld, d.SpentEpsilon, d.SpentDelta, d.DeltaBudget)
	return nil
}

// datasetOf is the service view of a stored dataset and its ledger.
func datasetOf(d store.Dataset, rel []store.Release) Dataset {
	acct := d.Accounting
	if acct == "" {
		acct = store.AccountingBasic
	}
	return Dataset{Name: d.Name, EpsilonBudget: d.EpsilonBudget, DeltaBudget: d.DeltaBudget, Accounting: acct,
		SpentEpsilon: d.SpentEpsilon, SpentDelta: d.SpentDelta, ComposedEpsilon: d.SpentEpsilon, CreatedAt: d.CreatedAt, Releases: ledgerOf(rel)}
}

func statePos(r *store.StateRecord) (time.Time, string) { return r.CreatedAt, r.ID }

// ListStreams lists streams (configuration and counts), oldest first.
func (s *Streams) List(ctx context.Context, p Page) ([]Stream, string, error) {
	rows, next, err := pageOf(p, cursorStreams, func(c store.Cursor, n int) ([]*store.StateRecord, error) {
		return s.store.ListStates(ctx, kindStream, c, n)
	}, statePos)
	if err != nil {
		return nil, "", storeErr(err, "listing streams")
	}
	out := make([]Stream, len(rows))
	for i, r := range rows {
		if out[i], err = s.streamView(r); err != nil {
			return nil, "", err
		}
	}
	return out, next, nil
}

// DeleteStream deletes a stream and its pan-private state; its dataset's
// ledger keeps every charge.
func (s *Streams) Delete(ctx context.Context, id string) error {
	if scoped(ctx) {
		rec, err := s.store.GetState(ctx, kindStream, id)
		if err != nil {
			return storeErr(err, "deleting stream")
		}
		if err := inScope(ctx, "id", rec.Dataset); err != nil {
			return err
		}
	}
	return storeErr(s.store.DeleteState(ctx, kindStream, id), "deleting stream")
}

// ListCounters lists counters, oldest first.
func (s *Counters) List(ctx context.Context, p Page) ([]Counter, string, error) {
	rows, next, err := pageOf(p, cursorCounters, func(c store.Cursor, n int) ([]*store.StateRecord, error) {
		return s.store.ListStates(ctx, kindCounter, c, n)
	}, statePos)
	if err != nil {
		return nil, "", storeErr(err, "listing counters")
	}
	out := make([]Counter, len(rows))
	for i, r := range rows {
		if out[i], err = s.counterOf(r); err != nil {
			return nil, "", err
		}
	}
	return out, next, nil
}

// DeleteCounter deletes a counter and its state.
func (s *Counters) Delete(ctx context.Context, id string) error {
	if err := inScope(ctx, "id", ""); err != nil { // counters belong to no dataset
		return err
	}
	return storeErr(s.store.DeleteState(ctx, kindCounter, id), "deleting counter")
}

// purgeExpired deletes expired samples and idempotency keys now.
func (s *Service) purgeExpired(ctx context.Context) (store.PurgeCount, error) {
	n, err := s.store.PurgeExpired(ctx, time.Now())
	if err != nil {
		return n, fmt.Errorf("purging: %w", err)
	}
	return n, nil
}

// RunJanitor purges expired samples and idempotency keys every interval
// until ctx ends. Reads never see expired rows whether or not it runs; it
// keeps storage bounded.
func (s *Service) RunJanitor(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := s.purgeExpired(ctx)
			switch {
			case err != nil && !errors.Is(err, context.Canceled):
				s.log.Warn("purging expired rows failed", "error", err)
			case n.Samples > 0 || n.IdempotencyKeys > 0:
				s.log.Info("purged expired rows", slog.Int64("samples", n.Samples), slog.Int64("idempotency_keys", n.IdempotencyKeys))
			}
		}
	}
}

// BudgetError is a release refused because it would overspend its
// dataset's budget; it says what was asked, what is spent and what remains.
// It matches ErrBudget with errors.Is.
type BudgetError struct {
	Dataset                          string
	RequestedEpsilon, RequestedDelta float64
	BudgetEpsilon, BudgetDelta       float64
	SpentEpsilon, SpentDelta         float64
	// Composed is true when SpentEpsilon is the dataset's ledger composed
	// by PLD at BudgetDelta, below BasicEpsilon, the sum of its epsilons
	// (SpentDelta stays the sum of deltas).
	Composed     bool
	BasicEpsilon float64
}

// remainingEpsilon is what is left of the epsilon budget.
func (e *BudgetError) remainingEpsilon() float64 { return max(0, e.BudgetEpsilon-e.SpentEpsilon) }

// remainingDelta is what is left of the delta budget.
func (e *BudgetError) remainingDelta() float64 { return max(0, e.BudgetDelta-e.SpentDelta) }

// Error says what was asked, spent and remains; it names the dataset
// (the client's own name) and no request data.
func (e *BudgetError) Error() string {
	if e.Composed {
		return fmt.Sprintf("the release asks epsilon %g and delta %g but dataset %q has spent epsilon %.6g and delta %g of its budget (%g, %g): remaining epsilon %.6g and delta %g (epsilon composed by privacy loss distributions at delta %g, against %g by adding epsilons; the release composed with the ledger would exceed epsilon %g)",
			e.RequestedEpsilon, e.RequestedDelta, e.Dataset, e.SpentEpsilon, e.SpentDelta, e.BudgetEpsilon, e.BudgetDelta, e.remainingEpsilon(), e.remainingDelta(),
			e.BudgetDelta, e.BasicEpsilon, e.BudgetEpsilon)
	}
	return fmt.Sprintf("the release asks epsilon %g and delta %g but dataset %q has spent epsilon %g and delta %g of its budget (%g, %g): remaining epsilon %g and delta %g",
		e.RequestedEpsilon, e.RequestedDelta, e.Dataset, e.SpentEpsilon, e.SpentDelta, e.BudgetEpsilon, e.BudgetDelta, e.remainingEpsilon(), e.remainingDelta())
}

// Is makes errors.Is(err, ErrBudget) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// checkBudget reports, without charging, whether (eps, delta) fits
// dataset's remaining budget: nil, a *BudgetError, or ErrNotFound for an
// unknown dataset. The charge itself stays atomic in the store; this only
// refuses early what the store would refuse.
func (s *Datasets) checkBudget(ctx context.Context, dataset string, eps, delta float64) error {
	d, _, err := s.store.GetDataset(ctx, dataset)
	if err != nil {
		return notFoundAs(storeErr(err, fmt.Sprintf("dataset %q", dataset)), "dataset", dataset)
	}
	c := &store.Charge{Dataset: dataset, Epsilon: eps, Delta: delta, Mechanism: accounting.MechanismGeneric}
	err = store.Admit(d, c, func() (*accounting.PLD, error) { return s.store.ComposedLedger(ctx, dataset) })
	if errors.Is(err, store.ErrBudget) {
		return s.budgetErrorOfComposed(ctx, d, eps, delta)
	}
	if err != nil {
		return storeErr(err, "checking the budget")
	}
	return nil
}

// budgetError turns a store.ErrBudget for a charge of (eps, delta) to
// dataset into a *BudgetError with the dataset's current spend; other
// errors pass through storeErr.
func (s *Datasets) budgetError(ctx context.Context, err error, what, dataset string, eps, delta float64) error {
	if !errors.Is(err, store.ErrBudget) {
		return storeErr(err, what)
	}
	d, _, gerr := s.store.GetDataset(ctx, dataset)
	if gerr != nil {
		return ErrBudget
	}
	return s.budgetErrorOfComposed(ctx, d, eps, delta)
}

// budgetErrorOfComposed is the *BudgetError of a refused charge of (eps,
// delta) to d, with what d has spent under its accounting.
func (s *Datasets) budgetErrorOfComposed(ctx context.Context, d store.Dataset, eps, delta float64) *BudgetError {
	e := &BudgetError{Dataset: d.Name, RequestedEpsilon: eps, RequestedDelta: delta, BudgetEpsilon: d.EpsilonBudget,
		BudgetDelta: d.DeltaBudget, SpentEpsilon: d.SpentEpsilon, SpentDelta: d.SpentDelta}
	if d.Accounting == store.AccountingPLD {
		if pld, err := s.store.ComposedLedger(ctx, d.Name); err == nil {
			if spent := accounting.Spent(pld, d.SpentEpsilon, d.SpentDelta, d.DeltaBudget); spent < d.SpentEpsilon {
				e.Composed, e.BasicEpsilon, e.SpentEpsilon = true, d.SpentEpsilon, spent
			}
		}
	}
	return e
}

// counterOf decodes a counter record into its public view.
func (s *Counters) counterOf(rec *store.StateRecord) (Counter, error) {
	c, err := panprivate.UnmarshalCounter(rec.State, s.noise, s.newRand())
	if err != nil {
		return Counter{}, fmt.Errorf("decoding counter: %w", err)
	}
	_, level := c.Cost()
	return Counter{ID: rec.ID, CreatedAt: rec.CreatedAt, State: c.State(), Level: level, CountError: counterError(c)}, nil
}

// sampleOf decodes a stored sample (with or without elements).
func sampleOf(smp *store.Sample) (*Sample, error) {
	spec, err := decodeSampleHeader(smp.Header)
	if err != nil {
		return nil, err
	}
	n := smp.Reported
	if smp.Elements != nil {
		n = len(smp.Elements)
	}
	return &Sample{ID: smp.ID, CreatedAt: smp.CreatedAt, ExpiresAt: smp.ExpiresAt, Spec: spec, Elements: smp.Elements, Reported: n}, nil
}
