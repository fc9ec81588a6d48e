package api

import "unsafe"

// parseElementFast parses the common shape of an NDJSON sample element,
// {"key":"...","frequency":N} (either order, optional spaces, no escapes in
// the key), without reflection and without allocating: key and freq alias
// line, so they are valid only as long as line is (the service hashes keys
// and copies only those it reports; see service.ElementSource). ok is false
// for anything else, and the caller then decodes the line with
// encoding/json, which accepts every valid form and reports errors
// precisely.
func parseElementFast(line []byte) (key string, freq []byte, ok bool) {
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
		name := string(line[start:i]) // no allocation: compared only
		i++
		if !expect(':') {
			return "", nil, false
		}
		skip()
		switch {
		case name == "key" && !haveKey:
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
		case name == "frequency" && !haveFreq:
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
