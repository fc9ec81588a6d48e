package tablecache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// Anchor places (issue 37; docs/store.md, "Anchored rows after a restart").
//
// A Table restored from the kept rows after a restart holds a public
// skeleton, and a release's draws step from it to every key's frequency
// (about 41,000 rows for the Zipf workload at eps 0.1), where the process
// that released before held the exact rows. What that release published
// says where the next one's keys lie: each key's MLE frequency, within
// about L/4 of its frequency. So a frequencies release stores, under its
// parameters, the places just below its keys' MLE frequencies
// (AnchorPlaces), and the warm start of a new process computes the rows at
// those places (sanitize.Table.Anchor) in the background, in memory only:
// the next release's draws start from them. The places are a function of
// the release's published estimates only (post-processing of its
// sanitized values); the rows are a function of the places and the public
// parameters. The encoding is versioned, checksummed and bounded like the
// kept rows, and one that fails its checks is deleted, never used.

// AnchorsFormat is the version of the stored anchor places' encoding.
const AnchorsFormat = 1

// anchorsMagic starts every encoding of anchor places.
const anchorsMagic = "PWSANCH"

// maxAnchorPlaces bounds the places stored for one parameter set (three
// per key of a release of about 16,000 reported keys).
const maxAnchorPlaces = 1 << 16

// anchorSteps bounds the rows one Anchor steps (a quiet core's 0.3-0.8
// s): the places come from released estimates, which a client's data
// sets. The Zipf release at eps 0.1 needs about 45,000.
const anchorSteps = 1 << 18

// anchorOffsets are the places below a key's MLE frequency where its rows
// are anchored, in units of L/8: a key's frequency lies within about L/4
// of its MLE frequency (eps 0.1 on the Zipf workload: 90% within -0.24 L
// and 0.2 L), and a draw walks up from the nearest anchored row below.
var anchorOffsets = []float64{0, 1, 2}

// AnchorPlaces returns the places at which the rows of the next release's
// draws are anchored, from the MLE frequencies of a release under p:
// round(f) - k L/8 for each f and k in anchorOffsets, at least 1,
// ascending and distinct, at most maxAnchorPlaces (the lowest).
func AnchorPlaces(p sanitize.Privacy, freq []float64) []int64 {
	l := sanitize.L(p)
	places := make([]int64, 0, len(freq)*len(anchorOffsets))
	for _, f := range freq {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 1 || f > float64(sanitize.MaxFrequency) {
			continue
		}
		for _, k := range anchorOffsets {
			if i := int64(math.Round(f) - math.Round(k*l/8)); i >= 1 {
				places = append(places, i)
			}
		}
	}
	slices.Sort(places)
	places = slices.Compact(places)
	return places[:min(len(places), maxAnchorPlaces)]
}

// AnchorsKey is the key of the stored anchor places of (p, s, m).
func (c *Cache) AnchorsKey(p sanitize.Privacy, s sanitize.Sampling, m sanitize.Method) string {
	return c.Key("anchors", p, s, m, Int("format", AnchorsFormat))
}

// StoreAnchors stores, behind the request, the anchor places of a release
// over t's parameters (AnchorPlaces of its MLE frequencies) in place of
// those stored before. It does nothing when kept rows are off: a Table
// made after a restart then holds no skeleton to anchor.
func (c *Cache) StoreAnchors(t *sanitize.Table, places []int64) {
	if c.kept.steps <= 0 || len(places) == 0 {
		return
	}
	c.writeBehind([]store.TableEntry{{Key: c.AnchorsKey(t.Privacy(), t.Sampling(), t.Method()), Data: encodeAnchors(places)}})
}

// encodeAnchors returns the encoding of places (ascending, distinct, at
// most maxAnchorPlaces): the header, their count, the first and the
// differences, and a SHA-256 checksum of all that.
func encodeAnchors(places []int64) []byte {
	w := binenc.NewWriter(nil)
	w.Header(anchorsMagic, AnchorsFormat)
	w.Uvarint(uint64(len(places)))
	prev := int64(0)
	for _, i := range places {
		w.Uvarint(uint64(i - prev))
		prev = i
	}
	return w.Seal()
}

// errAnchors is wrapped by every decodeAnchors error.
var errAnchors = errors.New("tablecache: stored anchor places")

// decodeAnchors returns the places encoded in data, or an error when the
// checksum, header, count or any place (ascending, distinct, 1 to
// MaxFrequency) is wrong.
func decodeAnchors(data []byte) ([]int64, error) {
	body, err := binenc.Unseal(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errAnchors, err)
	}
	r := binenc.NewReader(body, errAnchors)
	if v := r.Header(anchorsMagic); r.Err() == nil && v != AnchorsFormat {
		r.Fail("format %d", v)
	}
	n := r.Intn(maxAnchorPlaces)
	places := make([]int64, 0, n)
	prev := int64(0)
	for range n {
		d := r.Intn(uint64(sanitize.MaxFrequency))
		if r.Err() != nil {
			break
		}
		if d == 0 || prev+int64(d) > sanitize.MaxFrequency {
			r.Fail("place %d after %d", prev+int64(d), prev)
			break
		}
		prev += int64(d)
		places = append(places, prev)
	}
	if err := r.Close(); err != nil {
		return nil, err
	}
	return places, nil
}

// anchorTable computes the anchored rows of t at the places stored for
// its parameters, when t was restored from kept rows, holds no anchored
// rows yet and the store holds sound places; a stored encoding that fails
// its checks is deleted. In the background (the warm start) it yields to
// the requests first; a prebuild anchors in its own request. It reports
// how many rows it anchored.
func (c *Cache) anchorTable(ctx context.Context, t *sanitize.Table, background bool) (int, error) {
	if !t.Restored() || t.Anchored() > 0 {
		return 0, nil
	}
	key := c.AnchorsKey(t.Privacy(), t.Sampling(), t.Method())
	data, ok, err := c.store.GetTable(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("reading anchor places: %w", err)
	}
	if !ok {
		return 0, nil
	}
	places, err := decodeAnchors(data)
	if err != nil {
		c.log.Warn("stored anchor places fail their checks: deleted", "key", key, "err", err)
		if d, ok := c.store.(store.TableDeleter); ok {
			if err := d.DeleteTable(ctx, key); err != nil {
				c.log.Warn("deleting anchor places", "key", key, "err", err)
			}
		}
		return 0, nil
	}
	if err := c.yieldIf(ctx, background); err != nil {
		return 0, err
	}
	n, err := t.Anchor(ctx, places, anchorSteps)
	c.warm.anchored.Add(int64(n))
	return n, err
}
