package tablecache

import (
	"strconv"
	"strings"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// AlgorithmVersion prefixes every cached table's key: a binary whose maths
// changed (either package's AlgorithmVersion) never serves a table computed
// by an older one, from memory or from the store.
const AlgorithmVersion = sanitize.AlgorithmVersion + "+" + estimate.AlgorithmVersion

// keyFormat is the version of the keys' layout. Changing the layout changes
// it, so that no key of an older layout is ever read as one of the new.
const keyFormat = "k2"

// Part is one parameter of a cached table beyond its sanitizer's.
type Part struct{ name, value string }

// Int is the Part name=v.
func Int(name string, v int64) Part { return Part{name, strconv.FormatInt(v, 10)} }

// Str is the Part name=v.
func Str(name, v string) Part { return Part{name, v} }

// suffix is the part as Key writes it after the parameters.
func (p Part) suffix() string { return "|" + p.name + "=" + p.value }

// Range is the range [from, to] of frequencies a table covers.
func Range(from, to int64) Part {
	return Part{"range", strconv.FormatInt(from, 10) + "-" + strconv.FormatInt(to, 10)}
}

// Key is the one builder of the cache's keys: the key layout's version, the
// cache's algorithm version, the table's kind with its sanitizer's
// canonical parameters (sanitize.Key; m is empty for tables that do not
// depend on the method), then the further parameters in order, each as
// |name=value.
func (c *Cache) Key(kind string, p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method, parts ...Part) string {
	var b strings.Builder
	b.WriteString(c.keyHead())
	b.WriteString(sanitize.Key(kind, p, smp, m))
	for _, part := range parts {
		b.WriteString(part.suffix())
	}
	return b.String()
}

// keyHead is what every key of this Cache begins with (the key format and
// the algorithm version), before the parameters: the warm start lists and
// parses stored keys by it.
func (c *Cache) keyHead() string { return keyFormat + "|" + c.version + "|" }
