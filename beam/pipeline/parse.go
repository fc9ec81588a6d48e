package pipeline

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Dead-letter reasons. They describe what is wrong with a record without
// quoting it: raw records are never logged nor copied to the dead letters.
const (
	reasonJSON       = "not a JSON object"
	reasonCSV        = "not a CSV record"
	reasonColumns    = "wrong number of CSV columns"
	reasonKeyMissing = "key field missing"
	reasonKeyType    = "key field is not a string"
	reasonKeyEmpty   = "key is empty"
	reasonKeyLong    = "key is longer than the key byte limit"
	reasonValueMiss  = "weight/frequency field missing"
	reasonValueBad   = "weight/frequency is not an integer of at least 1"
	reasonValueBig   = "frequency exceeds the largest frequency the sanitizer answers for"
)

// DeadLetter is one line of the dead-letter output: where a bad record came
// from and why it was refused, never the record.
type DeadLetter struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// parseFn validates one input line into (key, amount): amount is 1 per record,
// the clamped weight with a weight field, or the key's frequency for
// aggregated input. Bad lines go to the dead-letter output.
type parseFn struct {
	Format      string   `json:"format"`        // "ndjson" or "csv"
	KeyField    string   `json:"key_field"`     // field or column naming the key
	ValueField  string   `json:"value_field"`   // weight or frequency field; "" counts 1 per record
	Aggregated  bool     `json:"aggregated"`    // ValueField is a frequency (not clamped)
	MaxWeight   int64    `json:"max_weight"`    // clamp for weights
	MaxValue    int64    `json:"max_value"`     // largest accepted frequency (aggregated input)
	MaxKeyBytes int      `json:"max_key_bytes"` // longer keys are refused
	Columns     []string `json:"columns"`       // CSV header
	HeaderLine  string   `json:"header_line"`   // the CSV header line, skipped wherever it appears

	keyCol, valCol int
	valid          beam.Counter
	invalid        beam.Counter
	clamped        beam.Counter
}

// Setup resolves the CSV columns and the counters.
func (f *parseFn) Setup() {
	f.keyCol, f.valCol = -1, -1
	for i, c := range f.Columns {
		if c == f.KeyField {
			f.keyCol = i
		}
		if f.ValueField != "" && c == f.ValueField {
			f.valCol = i
		}
	}
	f.valid = beam.NewCounter(metricsNamespace, CounterValid)
	f.invalid = beam.NewCounter(metricsNamespace, CounterInvalid)
	f.clamped = beam.NewCounter(metricsNamespace, CounterClamped)
}

// ProcessElement parses one line of file.
func (f *parseFn) ProcessElement(ctx context.Context, file, line string, emit func(string, int64), dead func(string)) error {
	line = strings.TrimRight(line, "\r")
	if strings.TrimSpace(line) == "" || (f.Format == FormatCSV && line == f.HeaderLine) {
		return nil
	}
	var key, val string
	var reason string
	if f.Format == FormatCSV {
		key, val, reason = f.csvFields(line)
	} else {
		key, val, reason = f.jsonFields(line)
	}
	var amount int64 = 1
	if reason == "" {
		switch {
		case key == "":
			reason = reasonKeyEmpty
		case len(key) > f.MaxKeyBytes:
			reason = reasonKeyLong
		case f.ValueField != "":
			n, err := strconv.ParseInt(val, 10, 64)
			switch {
			case err != nil || n < 1:
				reason = reasonValueBad
			case f.Aggregated && n > f.MaxValue:
				reason = reasonValueBig
			case !f.Aggregated && n > f.MaxWeight:
				f.clamped.Inc(ctx, 1)
				amount = f.MaxWeight
			default:
				amount = n
			}
		}
	}
	if reason != "" {
		f.invalid.Inc(ctx, 1)
		b, err := json.Marshal(DeadLetter{File: file, Reason: reason})
		if err != nil {
			return err
		}
		dead(string(b))
		return nil
	}
	f.valid.Inc(ctx, 1)
	emit(key, amount)
	return nil
}

func (f *parseFn) csvFields(line string) (key, val, reason string) {
	r := csv.NewReader(strings.NewReader(line))
	r.FieldsPerRecord = -1
	rec, err := r.Read()
	if err != nil {
		return "", "", reasonCSV
	}
	if len(rec) != len(f.Columns) {
		return "", "", reasonColumns
	}
	key = rec[f.keyCol]
	if f.valCol >= 0 {
		val = strings.TrimSpace(rec[f.valCol])
	}
	return key, val, ""
}

// jsonFields returns the key and the text of the value field of one NDJSON
// line. Lines whose members are flat (strings without escapes, numbers,
// true, false, null) are scanned in place by scanFlat; any other line (an
// escape, a nested value, anything unusual) is decoded by jsonFieldsSlow,
// the reference. Both give the same answer on every line (FuzzJSONFields).
func (f *parseFn) jsonFields(line string) (key, val, reason string) {
	if key, val, reason, ok := f.scanFlat(line); ok {
		return key, val, reason
	}
	return f.jsonFieldsSlow(line)
}

// jsonFieldsSlow decodes the line into a map of raw members with
// encoding/json.
func (f *parseFn) jsonFieldsSlow(line string) (key, val, reason string) {
	var obj map[string]json.RawMessage
	d := json.NewDecoder(strings.NewReader(line))
	if err := d.Decode(&obj); err != nil || obj == nil || d.More() {
		return "", "", reasonJSON
	}
	raw, ok := obj[f.KeyField]
	if !ok {
		return "", "", reasonKeyMissing
	}
	if err := json.Unmarshal(raw, &key); err != nil {
		return "", "", reasonKeyType
	}
	if f.ValueField != "" {
		v, ok := obj[f.ValueField]
		if !ok {
			return "", "", reasonValueMiss
		}
		// An integer JSON number, or a string holding one.
		v = bytes.TrimSpace(v)
		if len(v) > 1 && v[0] == '"' {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return "", "", reasonValueBad
			}
			v = []byte(s)
		}
		val = string(v)
	}
	return key, val, ""
}

// JSON value kinds scanFlat tells apart.
const (
	kindNone   = iota // member absent
	kindString        // a string without escapes
	kindNull          // null
	kindOther         // a number, true or false
)

// scanFlat reads one JSON object whose member names are plain ASCII
// strings and whose values are strings without escapes, numbers, true,
// false or null, validating it as encoding/json would, and picks the key
// and value members (the last of repeated names, as a map decode does). It
// returns ok false, and nothing else, for any line outside that shape: the
// caller then decodes it with jsonFieldsSlow.
func (f *parseFn) scanFlat(line string) (key, val, reason string, ok bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return "", "", "", false
	}
	i = skipSpace(line, i+1)
	keyKind, valKind := kindNone, kindNone
	var keyText, valText string
	if i < len(line) && line[i] == '}' {
		i++
	} else {
		for {
			// Member name: a string of printable ASCII without escapes.
			if i >= len(line) || line[i] != '"' {
				return "", "", "", false
			}
			start := i + 1
			i = start
			for i < len(line) && line[i] != '"' {
				if c := line[i]; c < 0x20 || c >= 0x80 || c == '\\' {
					return "", "", "", false
				}
				i++
			}
			if i >= len(line) {
				return "", "", "", false
			}
			name := line[start:i]
			i = skipSpace(line, i+1)
			if i >= len(line) || line[i] != ':' {
				return "", "", "", false
			}
			i = skipSpace(line, i+1)
			if i >= len(line) {
				return "", "", "", false
			}
			// Value.
			var kind int
			var text string
			switch c := line[i]; {
			case c == '"':
				start := i + 1
				i = start
				ascii := true
				for i < len(line) && line[i] != '"' {
					c := line[i]
					if c < 0x20 || c == '\\' {
						return "", "", "", false
					}
					if c >= 0x80 {
						ascii = false
					}
					i++
				}
				if i >= len(line) {
					return "", "", "", false
				}
				kind, text = kindString, line[start:i]
				if !ascii && !utf8.ValidString(text) {
					return "", "", "", false // encoding/json would replace the bad bytes
				}
				i++
			case c == '-' || ('0' <= c && c <= '9'):
				end, good := scanNumber(line, i)
				if !good {
					return "", "", "", false
				}
				kind, text, i = kindOther, line[i:end], end
			case strings.HasPrefix(line[i:], "true"):
				kind, text, i = kindOther, "true", i+4
			case strings.HasPrefix(line[i:], "false"):
				kind, text, i = kindOther, "false", i+5
			case strings.HasPrefix(line[i:], "null"):
				kind, text, i = kindNull, "null", i+4
			default:
				return "", "", "", false // a nested value, or not JSON
			}
			if name == f.KeyField {
				keyKind, keyText = kind, text
			}
			if f.ValueField != "" && name == f.ValueField {
				valKind, valText = kind, text
			}
			i = skipSpace(line, i)
			if i >= len(line) {
				return "", "", "", false
			}
			if line[i] == '}' {
				i++
				break
			}
			if line[i] != ',' {
				return "", "", "", false
			}
			i = skipSpace(line, i+1)
		}
	}
	if skipSpace(line, i) != len(line) {
		return "", "", "", false
	}
	switch keyKind {
	case kindNone:
		return "", "", reasonKeyMissing, true
	case kindOther:
		return "", "", reasonKeyType, true
	case kindString:
		key = keyText
	} // null decodes into a string as "" (the key is then empty)
	if f.ValueField != "" {
		if valKind == kindNone {
			return "", "", reasonValueMiss, true
		}
		val = valText // a string's content, or the literal text
	}
	return key, val, "", true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// scanNumber checks the JSON number starting at i and returns its end.
func scanNumber(s string, i int) (int, bool) {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return i, false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return i, false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	return i, true
}
