package api

import (
	"strconv"
	"unsafe"

	"github.com/pwsd/pwsd/internal/service"
)

// ndjsonElements returns the source of the elements of an NDJSON sample
// body whose header line lr has read. A line of the common shape (see
// parseElementFast) with a valid element is taken without allocating: the
// key aliases the line buffer (see service.ElementSource). Any other line,
// and every invalid element, goes through encoding/json and elementFields,
// which report errors precisely with the line and element index.
func (h *handler) ndjsonElements(lr *lineReader, lines *elementLines) service.ElementSource {
	i := 0
	return func() (string, int64, error) {
		line, err := lr.next()
		if err != nil {
			return "", 0, err
		}
		i++
		lines.add(lr.n)
		if k, f, ok := parseElementFast(line); ok {
			// The fast path's keys are printable ASCII, so valid UTF-8.
			if v, ok := digitsValue(f); ok && v >= 1 && v <= h.limits.MaxFrequency && k != "" && len(k) <= h.limits.MaxKeyBytes {
				return k, v, nil
			}
			k, f, err := h.elementFields(i-1, k, aliasString(f))
			if err != nil {
				return "", 0, atLine(err, lr.n)
			}
			return k, f, nil
		}
		var e SampleElement
		if err := decodeLine(line, &e, lr.n, "elements["+strconv.Itoa(i-1)+"]"); err != nil {
			return "", 0, err
		}
		k, f, err := h.element(i-1, e)
		if err != nil {
			return "", 0, atLine(err, lr.n)
		}
		return k, f, nil
	}
}

// digitsValue returns the value of a run of at most 18 decimal digits (any
// such value fits an int64); ok is false for anything else.
func digitsValue(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// parseElementFast parses the common shape of an NDJSON sample element,
// {"key":"...","frequency":N} (either order, optional spaces, no escapes in
// the key), without reflection and without allocating: key and freq alias
// line, so they are valid only as long as line is (the service hashes keys
// and copies only those it reports; see service.ElementSource). ok is false
// for anything else, and the caller then decodes the line with
// encoding/json, which accepts every valid form and reports errors
// precisely.
func parseElementFast(line []byte) (key string, freq []byte, ok bool) {
	if key, freq, ok := parseElementCanonical(line); ok {
		return key, freq, true
	}
	return parseElementSpaced(line)
}

// parseElementCanonical parses exactly {"key":"...","frequency":N}, the
// shape clients write without spaces; see parseElementFast.
func parseElementCanonical(line []byte) (key string, freq []byte, ok bool) {
	const open, mid = `{"key":"`, `","frequency":`
	if len(line) < len(open)+len(mid)+2 || string(line[:len(open)]) != open {
		return "", nil, false
	}
	i := len(open)
	for ; i < len(line) && line[i] != '"'; i++ {
		if c := line[i]; c == '\\' || c < 0x20 || c >= 0x80 {
			return "", nil, false // escapes, control or non-ASCII: let encoding/json validate
		}
	}
	if len(line)-i < len(mid)+2 || string(line[i:i+len(mid)]) != mid {
		return "", nil, false
	}
	key = aliasString(line[len(open):i])
	i += len(mid)
	start := i
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	if i == start || (line[start] == '0' && i-start > 1) || i != len(line)-1 || line[i] != '}' {
		return "", nil, false // empty, a leading zero JSON forbids, or more after the number
	}
	return key, line[start:i], true
}

// parseElementSpaced is parseElementFast for either member order and
// optional spaces and tabs.
func parseElementSpaced(line []byte) (key string, freq []byte, ok bool) {
	i := 0
	skip := func() {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
	}
	expect := func(c byte) bool {
		skip()
		if i < len(line) && line[i] == c {
			i++
			return true
		}
		return false
	}
	if !expect('{') {
		return "", nil, false
	}
	var haveKey, haveFreq bool
	for n := 0; n < 2; n++ {
		if n == 1 && !expect(',') {
			return "", nil, false
		}
		if !expect('"') {
			return "", nil, false
		}
		start := i
		for i < len(line) && line[i] != '"' {
			i++
		}
		if i >= len(line) {
			return "", nil, false
		}
		name := line[start:i]
		i++
		if !expect(':') {
			return "", nil, false
		}
		skip()
		switch {
		case string(name) == "key" && !haveKey: // the conversions compare without allocating
			if i >= len(line) || line[i] != '"' {
				return "", nil, false
			}
			i++
			start := i
			for i < len(line) && line[i] != '"' {
				c := line[i]
				if c == '\\' || c < 0x20 || c >= 0x80 {
					return "", nil, false // escapes, control or non-ASCII: let encoding/json validate
				}
				i++
			}
			if i >= len(line) {
				return "", nil, false
			}
			key = aliasString(line[start:i])
			i++
			haveKey = true
		case string(name) == "frequency" && !haveFreq:
			start := i
			for i < len(line) && line[i] >= '0' && line[i] <= '9' {
				i++
			}
			if i == start || (line[start] == '0' && i-start > 1) {
				return "", nil, false // empty, or a leading zero JSON forbids
			}
			freq = line[start:i]
			haveFreq = true
		default:
			return "", nil, false
		}
	}
	if !expect('}') {
		return "", nil, false
	}
	skip()
	return key, freq, i == len(line)
}

// aliasString returns b's bytes as a string without copying: the string is
// valid only while b is not modified.
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
