package api

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/go-playground/validator/v10"

	"github.com/pwsd/pwsd/internal/panprivate"
)

// newValidator returns a validator that names fields by their JSON names.
func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		if name == "" {
			return f.Name
		}
		return name
	})
	_ = v.RegisterValidation("dataset_name", func(fl validator.FieldLevel) bool { return datasetNameRE.MatchString(fl.Field().String()) })
	return v
}

// datasetNameRE is what a dataset's name may be (the dataset_name rule).
var datasetNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// mediaType returns the request's media type without parameters.
func mediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// isNDJSON reports whether the body is newline-delimited JSON.
func isNDJSON(r *http.Request) bool { return mediaType(r) == "application/x-ndjson" }

// wantsNDJSON reports whether the client asked for an NDJSON answer.
func wantsNDJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/x-ndjson")
}

// decodeJSON decodes exactly one JSON value from body into dst, strictly:
// unknown fields, duplicate names, invalid UTF-8 and trailing data are
// refused, and field names match exactly. Errors are problems naming the
// JSON path as the client wrote it ("elements[3].frequency") and never
// quoting the input.
func decodeJSON(body io.Reader, dst any) error {
	if err := jsonv2.UnmarshalRead(body, dst, jsonv2.RejectUnknownMembers(true)); err != nil {
		return decodeProblem(err, 0, "")
	}
	return nil
}

// decodeLine decodes NDJSON line number lineNo (1-based) strictly into dst;
// prefix is the JSON path of the value the line holds in the equivalent JSON
// body ("elements[2]", "" for the header), so that errors name both the
// path and the line.
func decodeLine(line []byte, dst any, lineNo int, prefix string) error {
	if err := jsonv2.Unmarshal(line, dst, jsonv2.RejectUnknownMembers(true)); err != nil {
		return decodeProblem(err, lineNo, prefix)
	}
	return nil
}

func tooLarge(limit int64) *Problem {
	return newProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body exceeds the limit of %d bytes (PWSD_MAX_BODY_BYTES)", limit))
}

// atLine marks the field errors of a problem with the NDJSON line they come
// from; other errors pass unchanged.
func atLine(err error, lineNo int) error {
	var p *Problem
	if err == nil || !errors.As(err, &p) {
		return err
	}
	cp := *p
	cp.Errors = make([]FieldError, len(p.Errors))
	for i, fe := range p.Errors {
		if fe.Line == 0 {
			fe.Line = lineNo
		}
		cp.Errors[i] = fe
	}
	if len(cp.Errors) == 0 {
		cp.Errors = []FieldError{{Field: "(line)", Message: "is not valid", Line: lineNo}}
	}
	return &cp
}

// pointerPath turns a JSON pointer ("/elements/0/key") into the path a
// client writes ("elements[0].key"), appended to prefix.
func pointerPath(prefix string, ptr string) string {
	out := prefix
	if ptr == "" {
		return out
	}
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		if _, err := strconv.Atoi(seg); err == nil {
			out += "[" + seg + "]"
			continue
		}
		if len(seg) > 64 {
			seg = seg[:64]
		}
		seg = strings.ToValidUTF8(seg, "?")
		if out != "" {
			out += "."
		}
		out += seg
	}
	return out
}

// IntegerError is why a JSON value is not an acceptable Integer.
type IntegerError struct{ Msg string }

func (e *IntegerError) Error() string { return e.Msg }

// Integer is a JSON number that must be an integer. Integral numbers written
// with a fraction or an exponent (5.0, 1e2: pandas writes integer columns so)
// are accepted; strings ("900"), fractions (2.5) and numbers beyond 2^53
// written that way are refused. The value is the integer's decimal text.
type Integer string

// UnmarshalJSON implements json.Unmarshaler (both encoding/json versions).
func (n *Integer) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return &IntegerError{"must be a JSON integer"}
	}
	switch c := b[0]; {
	case c == 'n': // null: absent
		*n = ""
		return nil
	case c == '"':
		return &IntegerError{"must be a JSON integer, not a string"}
	case c != '-' && (c < '0' || c > '9'):
		return &IntegerError{"must be a JSON integer"}
	}
	if isIntegerText(b) {
		*n = Integer(b)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	switch {
	case err != nil && isRangeErr(err):
		return &IntegerError{"is out of range"}
	case err != nil:
		return &IntegerError{"must be a JSON integer"}
	case f != math.Trunc(f):
		return &IntegerError{"must be an integer"}
	case math.Abs(f) > 1<<53:
		return &IntegerError{"is out of range (integers above 2^53 must be written without a fraction or exponent)"}
	}
	*n = Integer(strconv.FormatInt(int64(f), 10))
	return nil
}

func isIntegerText(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// decodeProblem turns a JSON decoding error into a problem naming the JSON
// path (under prefix) and, for NDJSON, the line; it never echoes input.
func decodeProblem(err error, lineNo int, prefix string) *Problem {
	var mbe *http.MaxBytesError
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	var ie *IntegerError
	field := func(ptr string) string {
		if p := pointerPath(prefix, ptr); p != "" {
			return p
		}
		return "(body)"
	}
	fe := func(status int, detail, ptr, msg string) *Problem {
		return newProblem(status, detail, FieldError{Field: field(ptr), Message: msg, Line: lineNo})
	}
	switch {
	case errors.As(err, &mbe):
		return tooLarge(mbe.Limit)
	case errors.As(err, &syn):
		switch {
		case syn.Err != nil && syn.Err.Error() == "invalid UTF-8": // jsontext does not export the error
			return fe(http.StatusUnprocessableEntity, detailInvalid, string(syn.JSONPointer), "must be valid UTF-8")
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			return fe(http.StatusBadRequest, detailMalformed, string(syn.JSONPointer), "is given more than once")
		case errors.Is(err, io.ErrUnexpectedEOF) && syn.ByteOffset == 0 && lineNo == 0:
			return fe(http.StatusBadRequest, detailMalformed, "", "is empty; a JSON object is required")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fe(http.StatusBadRequest, detailMalformed, string(syn.JSONPointer), "is truncated")
		default:
			return fe(http.StatusBadRequest, detailMalformed, string(syn.JSONPointer), fmt.Sprintf("is not valid JSON (at byte offset %d)", syn.ByteOffset))
		}
	case errors.As(err, &sem):
		ptr := string(sem.JSONPointer)
		switch {
		case errors.Is(err, jsonv2.ErrUnknownName):
			msg := "is not a known field"
			if s := closestName(lastToken(ptr), jsonNames(sem.GoType)); s != "" {
				msg += "; did you mean " + s + "?"
			}
			return fe(http.StatusBadRequest, detailMalformed, ptr, msg)
		case errors.As(err, &ie):
			return fe(http.StatusUnprocessableEntity, detailInvalid, ptr, ie.Msg)
		case errors.Is(err, strconv.ErrRange):
			return fe(http.StatusUnprocessableEntity, detailInvalid, ptr, rangeMessage(sem.GoType))
		case sem.GoType == reflect.TypeFor[panprivate.Event]():
			msg := `must be {"user": id or name, "op": "delete" (optional)}`
			if strings.Contains(fmt.Sprint(sem.Err), "without user") {
				return fe(http.StatusUnprocessableEntity, detailInvalid, ptr+"/user", "is required: a user id (integer) or name (string)")
			}
			return fe(http.StatusUnprocessableEntity, detailInvalid, ptr, msg)
		case sem.GoType != nil:
			// A well-formed value of the wrong type is an invalid field, as
			// every other field error (422), and the message says what was
			// sent: "0.5" quoted is a string, not a number (issue 31).
			msg := "must be " + goKind(sem.GoType)
			switch sent := jsonKindName(sem.JSONKind); {
			case sem.JSONKind == '0' && strings.Contains(msg, "integer"):
				msg += ", not a number written with a fraction or exponent"
			case sent != "":
				msg += ", not " + sent
			}
			return fe(http.StatusUnprocessableEntity, detailInvalid, ptr, msg)
		default:
			return fe(http.StatusBadRequest, detailMalformed, ptr, "is not valid")
		}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fe(http.StatusBadRequest, detailMalformed, "", "is truncated")
	default:
		return fe(http.StatusBadRequest, detailMalformed, "", "could not be read")
	}
}

// detailMalformed is the one detail text of every 400.
const detailMalformed = "the request is malformed: errors names each offending field or parameter"

func detailFor(status int) string {
	if status == http.StatusBadRequest {
		return detailMalformed
	}
	return detailInvalid
}

// rangeMessage says that a number is out of the range of Go type t.
func rangeMessage(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "is out of range"
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "is out of range: must be a finite number of magnitude below 1.8e308"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		lim := int64(1)<<(t.Bits()-1) - 1
		return fmt.Sprintf("is out of range: must be from %d to %d", -lim-1, lim)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("is out of range: must be from 0 to %d", uint64(1)<<(t.Bits()-1)*2-1)
	}
	return "is out of range"
}

// jsonKindName names the kind of a JSON value a client sent, with its
// article ("" when unknown).
func jsonKindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string (write numbers and booleans without quotes)"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return ""
}

// lastToken is the last reference token of a JSON pointer, unescaped: the
// member name an unknown-name error points at.
func lastToken(ptr string) string {
	i := strings.LastIndexByte(ptr, '/')
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(ptr[i+1:])
}

// jsonNames lists the JSON member names of struct type t (through
// pointers), from their json tags: the names a misspelt member is matched
// against. Nil for other types.
func jsonNames(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case name != "":
			names = append(names, name)
		case f.Anonymous:
			names = append(names, jsonNames(f.Type)...)
		case f.IsExported():
			names = append(names, f.Name)
		}
	}
	return names
}

// goKind names a Go type's JSON kind in words.
func goKind(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer (digits only, no fraction or exponent)"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer >= 0 (digits only, no fraction or exponent)"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// lineReader reads NDJSON lines with a maximum line length.
type lineReader struct {
	r    *bufio.Reader
	max  int
	n    int // lines read
	line []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next non-empty line, io.EOF at the end, or a problem.
func (lr *lineReader) next() ([]byte, error) {
	for {
		lr.line = lr.line[:0]
		for {
			chunk, err := lr.r.ReadSlice('\n')
			lr.line = append(lr.line, chunk...)
			if len(lr.line) > lr.max {
				return nil, newProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("line %d exceeds the NDJSON line limit of %d bytes (PWSD_MAX_LINE_BYTES)", lr.n+1, lr.max))
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && !errors.Is(err, io.EOF) {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					return nil, tooLarge(mbe.Limit)
				}
				return nil, fmt.Errorf("reading request body: %w", err)
			}
			if errors.Is(err, io.EOF) && len(lr.line) == 0 {
				return nil, io.EOF
			}
			break
		}
		lr.n++
		if l := bytes.TrimSpace(lr.line); len(l) > 0 {
			return l, nil
		}
	}
}

// decodeValid decodes a strict JSON body into dst and validates it; the
// error is a problem for the handler to return.
func (h *handler) decodeValid(r *http.Request, dst any) error {
	if err := decodeJSON(r.Body, dst); err != nil {
		return err
	}
	if err := h.validate.Struct(dst); err != nil {
		return validationProblem(err, "")
	}
	return nil
}
