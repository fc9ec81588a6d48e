package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-playground/validator/v10"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/service"
)

// FieldError names one invalid field by its JSON path, e.g. "privacy.epsilon".
type FieldError struct {
	// Field is the JSON path of the field as the client wrote it
	// ("privacy.epsilon", "elements[3].frequency"), or the query parameter's
	// name; "(body)" or "(query)" when the whole body or query is at fault.
	Field string `json:"field" example:"privacy.epsilon"`
	// Message says what is wrong, in words; it never quotes the value.
	Message string `json:"message" example:"must be greater than 0"`
	// Line is the NDJSON line the error is on (1 = the first line), for
	// NDJSON bodies; Field then still names the JSON path (elements[i]).
	Line int `json:"line,omitempty" example:"3"`
}

// Problem is an RFC 9457 problem details object.
type Problem struct {
	// Type is a stable URI naming the kind of problem.
	Type string `json:"type" example:"https://pwsd.dev/problems/invalid-input"`
	// Title is the HTTP status text.
	Title string `json:"title" example:"Unprocessable Entity"`
	// Status is the HTTP status code.
	Status int `json:"status" example:"422"`
	// Detail explains this occurrence; it never contains request data.
	Detail string `json:"detail,omitempty"`
	// Errors names each invalid field or parameter.
	Errors []FieldError `json:"errors,omitempty"`
	// RequestID is the request's id (the X-Request-Id header), to match a
	// call with the server's log line.
	RequestID string `json:"request_id"`
}

// detailInvalid is the one detail text of every 422 whose errors name the
// invalid fields or parameters.
const detailInvalid = "the request is not valid: errors names each invalid field or parameter"

// Error makes *Problem usable as an error inside handlers.
func (p *Problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail) }

// problemTypes maps statuses to stable problem type URIs.
var problemTypes = map[int]string{
	http.StatusBadRequest:            "https://pwsd.dev/problems/malformed-request",
	http.StatusUnauthorized:          "https://pwsd.dev/problems/unauthorized",
	http.StatusForbidden:             "https://pwsd.dev/problems/forbidden",
	http.StatusNotFound:              "https://pwsd.dev/problems/not-found",
	http.StatusMethodNotAllowed:      "https://pwsd.dev/problems/method-not-allowed",
	http.StatusConflict:              "https://pwsd.dev/problems/conflict",
	http.StatusRequestEntityTooLarge: "https://pwsd.dev/problems/too-large",
	http.StatusUnsupportedMediaType:  "https://pwsd.dev/problems/unsupported-media-type",
	http.StatusUnprocessableEntity:   "https://pwsd.dev/problems/invalid-input",
	http.StatusServiceUnavailable:    "https://pwsd.dev/problems/unavailable",
	http.StatusInternalServerError:   "https://pwsd.dev/problems/internal",
}

// newProblem builds a problem with the standard type and title for status.
// detail must never contain request data (keys, frequencies, user ids).
func newProblem(status int, detail string, errs ...FieldError) *Problem {
	t, ok := problemTypes[status]
	if !ok {
		t = "about:blank"
	}
	return &Problem{Type: t, Title: http.StatusText(status), Status: status, Detail: detail, Errors: errs}
}

// fieldsProblem is the 422 for the domain field errors fs, each named as
// the client wrote it: prefix (the JSON path of the object holding the
// domain parameters, "privacy." or "" for query parameters) and the
// parameter's domain name.
func fieldsProblem(prefix string, fs []checks.FieldError) *Problem {
	out := make([]FieldError, len(fs))
	for i, f := range fs {
		out[i] = FieldError{Field: prefix + f.Field, Message: f.Reason}
	}
	return newProblem(http.StatusUnprocessableEntity, detailInvalid, out...)
}

// invalid is a 422 naming one field.
func invalid(field, msg string) *Problem {
	return newProblem(http.StatusUnprocessableEntity, detailInvalid, FieldError{Field: field, Message: msg})
}

// requestIDWriter carries the request id to writeProblem, which gets only
// the ResponseWriter; wrappers that implement Unwrap (chi's do) keep it
// reachable.
type requestIDWriter struct {
	http.ResponseWriter
	id string
}

// Unwrap lets http.ResponseController and writeProblem reach the writer below.
func (w *requestIDWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes through for streamed answers.
func (w *requestIDWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// problemRequestID makes the request id of chi's RequestID middleware (which
// must run before it) available to every problem written for the request.
func problemRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&requestIDWriter{ResponseWriter: w, id: middleware.GetReqID(r.Context())}, r)
	})
}

// requestIDOf finds the request id through the writer's Unwrap chain.
func requestIDOf(w http.ResponseWriter) string {
	for i := 0; w != nil && i < 16; i++ {
		if rw, ok := w.(*requestIDWriter); ok {
			return rw.id
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	return w.Header().Get(middleware.RequestIDHeader)
}

// writeProblem writes p as application/problem+json with the request id.
func writeProblem(w http.ResponseWriter, p *Problem) {
	if p.RequestID == "" {
		cp := *p // problems may be shared values: never mutate them
		cp.RequestID = requestIDOf(w)
		p = &cp
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// validationProblem converts validator errors into a 422 with JSON field paths.
func validationProblem(err error, prefix string) *Problem {
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return newProblem(http.StatusUnprocessableEntity, detailInvalid)
	}
	out := make([]FieldError, 0, len(verrs))
	for _, fe := range verrs {
		out = append(out, FieldError{Field: jsonPath(prefix, fe.Namespace()), Message: message(fe)})
	}
	return newProblem(http.StatusUnprocessableEntity, detailInvalid, out...)
}

// jsonPath drops the top-level struct name from a validator namespace
// ("sampleRequest.privacy.epsilon" -> "privacy.epsilon"); names are JSON names
// because the validator is registered with a json tag name function.
func jsonPath(prefix, ns string) string {
	if i := strings.IndexByte(ns, '.'); i >= 0 {
		ns = ns[i+1:]
	}
	// Embedded Go structs (SampleRequest's SampleHeader) have no JSON name:
	// drop their Go type names, which start with a capital letter.
	parts := strings.Split(ns, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" && (p[0] < 'A' || p[0] > 'Z') {
			kept = append(kept, p)
		}
	}
	ns = strings.Join(kept, ".")
	if prefix != "" {
		return prefix + "." + ns
	}
	return ns
}

// message renders a validator failure in words, never echoing the value.
func message(fe validator.FieldError) string {
	p := fe.Param()
	switch fe.Tag() {
	case "required", "required_if":
		return "is required"
	case "gt":
		return "must be greater than " + p
	case "gte":
		return "must be at least " + p
	case "lt":
		return "must be less than " + p
	case "lte":
		return "must be at most " + p
	case "min":
		return "must have at least " + p + " items or characters"
	case "max":
		return "must have at most " + p + " items or characters"
	case "oneof":
		return "must be one of: " + strings.ReplaceAll(p, " ", ", ")
	case "excluded_unless", "excluded_if":
		return "is not allowed here"
	case "printascii", "alphanum", "dataset_name":
		return "must be 1-128 characters of letters, digits, '.', '_' or '-'"
	default:
		return "is not valid (" + fe.Tag() + ")"
	}
}

// notFound is the 404 for err, saying what is missing: the service's
// *NotFoundError when it names it, else the resource the route names by its
// {id} or {name} ("sample \"abc\" does not exist").
func notFound(r *http.Request, err error) *Problem {
	var nf *service.NotFoundError
	if errors.As(err, &nf) {
		return newProblem(http.StatusNotFound, quoteBounded(nf))
	}
	if kind := resourceKind(r); kind != "resource" {
		id := chi.URLParam(r, "id")
		if id == "" {
			id = chi.URLParam(r, "name")
		}
		return newProblem(http.StatusNotFound, quoteBounded(&service.NotFoundError{Kind: kind, Name: id}))
	}
	return newProblem(http.StatusNotFound, "no such resource")
}

// quoteBounded renders a not-found error with its name cut to 128 bytes.
func quoteBounded(nf *service.NotFoundError) string {
	c := *nf
	if len(c.Name) > 128 {
		c.Name = strings.ToValidUTF8(c.Name[:128], "") + "..."
	}
	return c.Error()
}
