package api

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/service"
)

// query reads typed query parameters, collecting every field error so that
// one answer names all of them.
type query struct {
	v    url.Values
	errs []FieldError
}

func newQuery(r *http.Request) *query { return &query{v: r.URL.Query()} }

func (q *query) fail(field, msg string) {
	q.errs = append(q.errs, FieldError{Field: field, Message: msg})
}

// failErr records the field errors of a domain constructor's err; the
// domain names its parameters as the query does.
func (q *query) failErr(err error) {
	fs, _ := checks.Fields(err)
	for _, f := range fs {
		q.fail(f.Field, f.Reason)
	}
}

// problem returns the collected errors as one 422, or nil.
func (q *query) problem() error {
	if len(q.errs) == 0 {
		return nil
	}
	return newProblem(http.StatusUnprocessableEntity, detailInvalid, q.errs...)
}

func (q *query) has(name string) bool { return q.v.Get(name) != "" }

func (q *query) float(name string, required bool) (float64, bool) {
	s := q.v.Get(name)
	if s == "" {
		if required {
			q.fail(name, "is required")
		}
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && isRangeErr(err):
		q.fail(name, "is out of range: must be a finite number of magnitude below 1.8e308")
		return 0, false
	case err != nil:
		q.fail(name, "must be a number")
		return 0, false
	case math.IsNaN(f) || math.IsInf(f, 0):
		q.fail(name, "must be a finite number")
		return 0, false
	}
	return f, true
}

// isRangeErr reports whether a strconv error is a range error.
func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// floats reads a repeatable number parameter: 1 to max values, each finite
// and in [lo, hi]. Errors name the value by its position, as in q[2].
func (q *query) floats(name string, lo, hi float64, max int) []float64 {
	raw := q.v[name]
	if len(raw) == 0 || len(raw) > max {
		q.fail(name, fmt.Sprintf("give 1 to %d values, each a number in [%g, %g]", max, lo, hi))
		return nil
	}
	out := make([]float64, len(raw))
	for i, s := range raw {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || f < lo || f > hi {
			q.fail(fmt.Sprintf("%s[%d]", name, i), fmt.Sprintf("must be a number in [%g, %g]", lo, hi))
			continue
		}
		out[i] = f
	}
	return out
}

// floatList reads a comma-separated list of at most max finite numbers
// (custom sampling probabilities); errors name the value by its position,
// as in probabilities[2]. ok is false when the list is refused.
func (q *query) floatList(name string, max int) (list []float64, ok bool) {
	s := q.v.Get(name)
	if s == "" {
		return nil, true
	}
	parts := strings.Split(s, ",")
	if len(parts) > max {
		q.fail(name, "lists more probabilities than allowed (PWSD_MAX_CUSTOM_Q)")
		return nil, false
	}
	ok = true
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			q.fail(fmt.Sprintf("%s[%d]", name, i), "must be a finite number")
			ok = false
			continue
		}
		list = append(list, f)
	}
	return list, ok
}

// integer reads an integer parameter without bounds (the domain checks
// them); absent means 0.
func (q *query) integer(name string) int64 {
	s := q.v.Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		q.fail(name, "must be an integer")
	}
	return n
}

func (q *query) int(name string, def, lo, hi int64) int64 {
	s := q.v.Get(name)
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		q.fail(name, fmt.Sprintf("must be an integer from %d to %d", lo, hi))
		return def
	}
	return n
}

// privacy reads epsilon and delta.
func (q *query) privacy() sanitize.Privacy {
	eps, ok1 := q.float("epsilon", true)
	delta, ok2 := q.float("delta", true)
	if !ok1 || !ok2 {
		return sanitize.Privacy{}
	}
	p, err := sanitize.NewPrivacy(eps, delta)
	q.failErr(err)
	return p
}

// sampling reads scheme (default none), threshold, power and (custom)
// probabilities as a comma-separated list, with the rules of a body's
// sampling description (SamplingParams.sampling).
func (q *query) sampling(maxQ int) sanitize.Sampling {
	before := len(q.errs)
	sp := SamplingParams{Scheme: q.v.Get("scheme")}
	if sp.Scheme == "" {
		sp.Scheme = string(sanitize.DefaultScheme)
	}
	opt := func(name string) *float64 {
		if f, ok := q.float(name, false); ok {
			return &f
		}
		return nil
	}
	sp.Threshold, sp.Power = opt("threshold"), opt("power")
	sp.Probabilities, _ = q.floatList("probabilities", maxQ)
	if len(q.errs) > before {
		return sanitize.Sampling{}
	}
	s, err := sp.sampling(maxQ)
	q.failErr(err)
	return s
}

// method reads method (default max_separation).
func (q *query) method() sanitize.Method {
	m := sanitize.Method(q.v.Get("method"))
	if m == "" {
		return sanitize.DefaultMethod
	}
	if err := m.Validate(); err != nil {
		q.fail("method", "must be discrete or max_separation")
	}
	return m
}

// g reads g (default identity).
// level reads the confidence level of an interval: level=, strictly
// between 0 and 1, default 0.95.
func (q *query) level() float64 {
	level := 0.95
	if l, ok := q.float("level", false); ok {
		if !(l > 0 && l < 1) {
			q.fail("level", "must be a number strictly between 0 and 1")
		} else {
			level = l
		}
	}
	return level
}

func (q *query) g() estimate.G {
	s := q.v.Get("g")
	if s == "" {
		s = string(estimate.DefaultG)
	}
	g, err := estimate.ParseG(s)
	if err != nil {
		q.fail("g", "must be identity, count, power:P or cap:T")
	}
	return g
}

// estimator reads estimator (default mle).
func (q *query) estimator() estimate.Estimator {
	s := q.v.Get("estimator")
	if s == "" {
		return estimate.DefaultEstimator
	}
	e, err := estimate.ParseEstimator(s)
	if err != nil {
		q.fail("estimator", "must be mle, biased_down or unbiased")
	}
	return e
}

// frequencyRange reads frequency=F or A-B.
func (q *query) frequencyRange(maxFreq, maxRows int64) (int64, int64) {
	s := q.v.Get("frequency")
	if s == "" {
		q.fail("frequency", "is required: a frequency F or a range A-B")
		return 0, 0
	}
	a, b, isRange := strings.Cut(s, "-")
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi := lo
	var err2 error
	if isRange {
		hi, err2 = strconv.ParseInt(b, 10, 64)
	}
	switch {
	case err1 != nil || err2 != nil || lo < 1 || hi < lo:
		q.fail("frequency", "must be an integer F >= 1 or a range A-B with 1 <= A <= B")
	case hi > maxFreq:
		q.fail("frequency", fmt.Sprintf("must be at most %d (PWSD_MAX_FREQUENCY)", maxFreq))
	case hi-lo+1 > maxRows:
		q.fail("frequency", fmt.Sprintf("a range may span at most %d rows (PWSD_MAX_RANGE_ROWS)", maxRows))
	default:
		return lo, hi
	}
	return 0, 0
}

// maxFrequency reads max_frequency (default service.DefaultTableFrequency) for the reporting and
// estimator tables and their plots.
func (q *query) maxFrequency(l Limits) int64 {
	return q.int("max_frequency", service.DefaultTableFrequency, 1, l.MaxTableFrequency)
}

// maxNamedParams bounds how many offending parameters one problem names.
const maxNamedParams = 20

// checkQuery refuses, with a 400 naming them, query parameters the matched
// route does not declare in params ("METHOD pattern", from the route table:
// queryIndex) and single-valued ones given more than once; a route missing
// from params takes none. HEAD uses the GET entry. Routes that do not match
// (404, 405) pass through untouched.
// maxQueryParams bounds the parameters of one query string (docs/api.md):
// no route takes more than a few, and a repeating one (quantiles' q) a few
// hundred. Above it the answer is a 400 that says so (issue 31: 10,001
// parameters were blamed on percent-encoding, Go's own limit being 10,000).
const maxQueryParams = 1000

func checkQuery(root chi.Routes, params map[string]queryParams) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.RawQuery == "" {
				next.ServeHTTP(w, r)
				return
			}
			method, pattern := routeOf(root, r)
			if pattern == "" {
				next.ServeHTTP(w, r)
				return
			}
			if n := strings.Count(r.URL.RawQuery, "&") + 1; n > maxQueryParams {
				writeProblem(w, newProblem(http.StatusBadRequest, detailMalformed, FieldError{Field: "(query)", Message: fmt.Sprintf("has %d parameters; at most %d are accepted (no route takes more)", n, maxQueryParams)}))
				return
			}
			v, err := url.ParseQuery(r.URL.RawQuery)
			if err != nil {
				writeProblem(w, newProblem(http.StatusBadRequest, detailMalformed, FieldError{Field: "(query)", Message: "is not valid URL query syntax (bad percent-encoding or a ';' separator)"}))
				return
			}
			if p := queryProblem(params[method+" "+pattern], v); p != nil {
				if rctx := chi.RouteContext(r.Context()); rctx != nil {
					rctx.RoutePatterns = append(rctx.RoutePatterns, pattern) // logs and metrics label the route
				}
				writeProblem(w, p)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// queryProblem checks v against spec; nil when every parameter is known and
// no single-valued one repeats.
func queryProblem(spec queryParams, v url.Values) *Problem {
	kind := map[string]bool{} // name -> repeatable
	for _, n := range spec.single {
		kind[n] = false
	}
	for _, n := range spec.repeated {
		kind[n] = true
	}
	names := make([]string, 0, len(v))
	for n := range v {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []FieldError
	for _, n := range names {
		if len(errs) == maxNamedParams {
			break
		}
		repeatable, known := kind[n]
		switch {
		case !known:
			msg := "is not a parameter of this route"
			if s := closest(n, spec); s != "" {
				msg += "; did you mean " + s + "?"
			}
			errs = append(errs, FieldError{Field: paramName(n), Message: msg})
		case !repeatable && len(v[n]) > 1:
			errs = append(errs, FieldError{Field: n, Message: fmt.Sprintf("is given %d times; it takes one value", len(v[n]))})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return newProblem(http.StatusBadRequest, detailMalformed, errs...)
}

// paramName bounds an unknown parameter name for quoting in a problem.
func paramName(n string) string {
	if len(n) > 64 {
		n = n[:64]
	}
	if !utf8.ValidString(n) {
		n = strings.ToValidUTF8(n, "?")
	}
	return n
}

// closest suggests the declared parameter nearest to n (edit distance at
// most 2, or the same letters without separators), or "".
func closest(n string, spec queryParams) string {
	return closestName(n, spec.single, spec.repeated)
}

// closestName is the name among the groups within edit distance 2 of n
// (or equal to it but for case, '_', '-' and '.'), "" when none is: the
// "did you mean" of an unknown query parameter or JSON member.
func closestName(n string, groups ...[]string) string {
	if len(n) > 64 {
		return ""
	}
	best, bestD := "", 3
	squash := func(s string) string {
		return strings.NewReplacer("_", "", "-", "", ".", "").Replace(strings.ToLower(s))
	}
	for _, group := range groups {
		for _, c := range group {
			d := editDistance(n, c)
			if squash(n) == squash(c) {
				d = 0
			}
			if d < bestD {
				best, bestD = c, d
			}
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// str reads a string parameter, which must be valid UTF-8.
func (q *query) str(name string, required bool) string {
	s := q.v.Get(name)
	switch {
	case s == "" && required:
		q.fail(name, "is required")
	case !utf8.ValidString(s):
		q.fail(name, "must be valid UTF-8")
		return ""
	}
	return s
}
