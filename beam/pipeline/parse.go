package pipeline

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"

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

func (f *parseFn) jsonFields(line string) (key, val, reason string) {
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
