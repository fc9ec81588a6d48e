package api

import (
	"bufio"
	"encoding/csv"

	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/pwsd/pwsd/internal/jsonenc"
	"github.com/pwsd/pwsd/internal/service"
)

// csvMediaType is the media type of CSV samples, in and out.
const csvMediaType = "text/csv"

// csvReleaseParams are the query parameters of a CSV sample upload: the
// fields of SampleHeader, flattened (probabilities comma-separated).
var csvReleaseParams = []string{"dataset", "epsilon", "delta", "scheme", "threshold", "power", "probabilities", "release", "method"}

// wantsCSV reports whether the client asked for a CSV answer.
func wantsCSV(r *http.Request) bool { return strings.Contains(r.Header.Get("Accept"), csvMediaType) }

// csvHeader reads the release description of a CSV upload from the query
// string. Errors name the query parameter.
func csvHeader(r *http.Request) (SampleHeader, error) {
	q := newQuery(r)
	num := func(name string) *float64 {
		if f, ok := q.float(name, false); ok {
			return &f
		}
		return nil
	}
	hd := SampleHeader{
		Dataset:  q.v.Get("dataset"),
		Privacy:  PrivacyParams{Epsilon: num("epsilon"), Delta: num("delta")},
		Sampling: SamplingParams{Scheme: q.v.Get("scheme"), Threshold: num("threshold"), Power: num("power")},
		Release:  q.v.Get("release"),
		Method:   q.v.Get("method"),
	}
	// The count limit (PWSD_MAX_CUSTOM_Q) is enforced by SamplingParams.sampling.
	hd.Sampling.Probabilities, _ = q.floatList("probabilities", math.MaxInt)
	return hd, q.problem()
}

// queryNames renames the JSON paths of a release-description problem to the
// query parameters of a CSV upload ("privacy.epsilon" -> "epsilon").
func queryNames(err error) error {
	return mapFieldErrors(err, func(fe FieldError) FieldError {
		fe.Field = strings.TrimPrefix(strings.TrimPrefix(fe.Field, "privacy."), "sampling.")
		return fe
	})
}

// mapFieldErrors returns a copy of err's problem (when err is one) with f
// applied to each of its field errors; other errors are returned as they
// are.
func mapFieldErrors(err error, f func(FieldError) FieldError) error {
	var p *Problem
	if !errors.As(err, &p) {
		return err
	}
	q := *p
	q.Errors = make([]FieldError, len(p.Errors))
	for i, fe := range p.Errors {
		q.Errors[i] = f(fe)
	}
	return &q
}

// csvSample reads a text/csv upload: the release parameters from the query
// string, then a header row naming the columns key and frequency (in any
// order), then one element per row. Errors never quote a row.
func (h *handler) csvSample(r *http.Request, lines *elementLines) (service.SampleSpec, service.ElementSource, error) {
	hd, err := csvHeader(r)
	if err != nil {
		return service.SampleSpec{}, nil, err
	}
	spec, err := h.spec(hd)
	if err != nil {
		return spec, nil, queryNames(err)
	}
	cr := csv.NewReader(bufio.NewReaderSize(r.Body, 64<<10))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return spec, nil, newProblem(http.StatusBadRequest, "the CSV body is empty; line 1 must be a header row naming the columns key and frequency")
	}
	if err != nil {
		return spec, nil, csvProblem(err)
	}
	keyCol, freqCol := -1, -1
	for i, name := range header {
		if i == 0 { // a byte order mark can only open the file
			name = strings.TrimPrefix(name, "\uFEFF")
		}
		name = strings.TrimSpace(name)
		switch {
		case name == "key" && keyCol < 0:
			keyCol = i
		case name == "frequency" && freqCol < 0:
			freqCol = i
		default:
			return spec, nil, newProblem(http.StatusBadRequest, fmt.Sprintf("CSV line 1: column %d must be named key or frequency, once each (write pandas frames with index=False)", i+1))
		}
	}
	if keyCol < 0 || freqCol < 0 {
		return spec, nil, newProblem(http.StatusBadRequest, "CSV line 1: the header row must name the columns key and frequency")
	}
	i := 0
	src := func() (string, int64, error) {
		rec, err := cr.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", 0, io.EOF
			}
			return "", 0, csvProblem(err)
		}
		line, _ := cr.FieldPos(0)
		i++
		lines.add(line)
		var freq Integer
		if cell := strings.TrimSpace(rec[freqCol]); cell != "" {
			if err := freq.UnmarshalJSON([]byte(cell)); err != nil {
				return "", 0, atCSVLine(invalid(fmt.Sprintf("elements[%d].frequency", i-1), err.Error()), line)
			}
		}
		k, f, err := h.element(i-1, SampleElement{Key: csvKeyIn(rec[keyCol]), Frequency: freq})
		if err != nil {
			return "", 0, atCSVLine(err, line)
		}
		return k, f, nil
	}
	return spec, src, nil
}

// csvProblem maps an error of encoding/csv (whose messages quote no data).
func csvProblem(err error) error {
	var pe *csv.ParseError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return tooLarge(mbe.Limit)
	case errors.As(err, &pe):
		return newProblem(http.StatusBadRequest, fmt.Sprintf("CSV line %d: %v", pe.Line, pe.Err))
	default:
		return fmt.Errorf("reading CSV body: %w", err)
	}
}

// atCSVLine adds the CSV line number to an element problem's messages.
func atCSVLine(err error, line int) error {
	return mapFieldErrors(err, func(fe FieldError) FieldError {
		fe.Message = fmt.Sprintf("%s (CSV line %d)", fe.Message, line)
		return fe
	})
}

// csvColumns are the columns of a CSV sample answer, one per field of
// SanitizedElement; a keys release leaves value, frequency and
// contribution empty.
var csvColumns = []string{"key", "value", "frequency", "contribution"}

// writeSampleCSV renders a sample's elements as CSV with a header row. The
// sample's description is in the JSON and NDJSON forms (and in
// GET /v1/samples); CSV holds the elements only. Keys, the one text
// column, are always quoted and neutralised against formula injection
// (csvKeyOut); the numeric columns are numbers as strconv writes them (a
// negative number such as -3.2 is a number to a spreadsheet, not a
// formula) or empty.
func writeSampleCSV(w http.ResponseWriter, status int, smp *service.Sample) {
	w.Header().Set("Content-Type", csvMediaType+"; charset=utf-8; header=present")
	w.WriteHeader(status)
	bw := bufio.NewWriterSize(w, 64<<10)
	defer bw.Flush()
	bw.WriteString(strings.Join(csvColumns, ","))
	bw.WriteByte('\n')
	for i, e := range smp.Elements {
		writeQuoted(bw, csvKeyOut(e.Key))
		bw.WriteByte(',')
		bw.WriteString(csvFloat(e.Value))
		bw.WriteByte(',')
		if i < len(smp.Keys) {
			bw.WriteString(csvFloat(smp.Keys[i].Frequency))
			bw.WriteByte(',')
			bw.WriteString(csvFloat(smp.Keys[i].Contribution))
		} else {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
	}
}

// writeQuoted writes s as one quoted CSV field (RFC 4180: quotes doubled).
func writeQuoted(bw *bufio.Writer, s string) {
	bw.WriteByte('"')
	bw.WriteString(strings.ReplaceAll(s, `"`, `""`))
	bw.WriteByte('"')
}

// formulaLead reports whether s begins with a character that makes a
// spreadsheet read a cell as a formula (OWASP's list: = + - @ tab CR).
func formulaLead(s string) bool {
	return s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0
}

// csvKeyOut neutralises a key for a CSV answer the OWASP way: a key that a
// spreadsheet would run as a formula, once any leading single quotes are
// set aside, gets one more single quote in front (so a key that already
// began with quotes stays distinct). csvKeyIn undoes it.
func csvKeyOut(k string) string {
	if formulaLead(strings.TrimLeft(k, "'")) {
		return "'" + k
	}
	return k
}

// csvKeyIn reads a key cell of a CSV upload, undoing csvKeyOut, so that a
// CSV answer uploaded again holds the same keys: one leading single quote
// is dropped when, past all leading quotes, the cell begins with a formula
// character. Other cells are taken as they are.
func csvKeyIn(cell string) string {
	if strings.HasPrefix(cell, "'") && formulaLead(strings.TrimLeft(cell, "'")) {
		return cell[1:]
	}
	return cell
}

// csvFloat renders a number for CSV as the JSON answer does (integers as
// integers, jsonenc.AppendFloat); NaN and infinities (absent values) are
// empty cells.
func csvFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ""
	}
	return string(jsonenc.AppendFloat(nil, f))
}

// csvOnlyParams refuses the CSV release parameters on a JSON or NDJSON
// upload, whose body holds the release description.
func csvOnlyParams(r *http.Request) *Problem {
	q := r.URL.Query()
	var errs []FieldError
	for _, name := range csvReleaseParams {
		if q.Has(name) {
			errs = append(errs, FieldError{Field: name, Message: "is a query parameter of text/csv uploads only; JSON and NDJSON bodies describe the release themselves"})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return newProblem(http.StatusBadRequest, "the query has parameters this request does not take", errs...)
}
