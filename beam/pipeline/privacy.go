package pipeline

import (
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// The privacy unit.
//
// Without a weight field every valid record adds 1 to its key's frequency, so
// two inputs that differ by one record have frequency vectors that differ by
// 1 in one key (possibly 0 <-> 1: the key is present in one only). That is
// exactly the neighbouring relation the sanitizer tables are built for, and
// a release built at (epsilon, delta) is (epsilon, delta)-DP per record.
//
// With a weight field every record adds its weight, an integer clamped to
// [1, M]; one record then moves one key's frequency by up to M. The
// pipeline builds its tables at the unit parameters (epsilon', delta') of
// UnitPrivacy, chosen by group privacy so that any two frequencies at
// distance m <= M are (epsilon, delta)-indistinguishable:
//
//	epsilon' = epsilon / M
//	delta'   = delta (e^epsilon' - 1) / (e^{M epsilon'} - 1)   (delta / M when M = 1)
//
// since an (epsilon', delta')-DP pair chain of length m gives
// (m epsilon', delta' sum_{j<m} e^{j epsilon'}). The release then is
// (epsilon, delta)-DP per record (the user-facing guarantee, the one
// charged to a dataset), and the tables on disk and in the output header
// name the unit parameters they were built with. The exact hockey-stick
// audit (sanitize.AuditRows on the pairs (row i, row i+m), m = 1..M) checks
// it in the tests; group privacy is a bound, so the audit's loss is below
// delta.

// UnitPrivacy returns the per-unit parameters the tables must be built with
// so that a record moving one frequency by up to maxWeight units is
// (epsilon, delta)-DP. maxWeight 1 returns p unchanged.
func UnitPrivacy(p sanitize.Privacy, maxWeight int64) (sanitize.Privacy, error) {
	if maxWeight < 1 {
		return sanitize.Privacy{}, fmt.Errorf("max weight must be at least 1, got %d", maxWeight)
	}
	if maxWeight == 1 {
		return p, nil
	}
	m := float64(maxWeight)
	eps := p.Epsilon / m
	// delta' = delta (e^eps' - 1) / (e^{M eps'} - 1), computed with Expm1
	// so that small eps' loses no precision.
	delta := p.Delta * math.Expm1(eps) / math.Expm1(m*eps)
	u, err := sanitize.NewPrivacy(eps, delta)
	if err != nil {
		return sanitize.Privacy{}, fmt.Errorf("per-unit parameters (epsilon %g, delta %g) for max weight %d: %w", eps, delta, maxWeight, err)
	}
	return u, nil
}
