package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/pwsd/pwsd/internal/service"
)

// IdempotencyKeyHeader names the request header that makes a POST idempotent.
const IdempotencyKeyHeader = "Idempotency-Key"

// ReplayedHeader is set to "true" on an answer replayed for a repeated key.
const ReplayedHeader = "Idempotent-Replayed"

// OriginalRequestIDHeader, on a replayed answer, is the X-Request-Id of the
// request that produced it: the first request with the key, or for the 409
// that replaces the answer of a request whose resource was deleted, the
// DELETE. A replayed problem's request_id is the same id; the replay's own
// X-Request-Id header is the repeat's.
const OriginalRequestIDHeader = "Idempotent-Original-Request-Id"

// keptHeaders are the answer headers recorded and replayed with the body.
var keptHeaders = []string{"Content-Type", "Location"}

// maxIdempotencyKey bounds the length of an Idempotency-Key.
const maxIdempotencyKey = 255

// validIdempotencyKey: 1 to 255 visible ASCII characters.
func validIdempotencyKey(k string) bool {
	if k == "" || len(k) > maxIdempotencyKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// callerIdentity is a digest of the bearer token the request carries ("" for
// none), so that one caller's keys never answer another's requests.
func callerIdentity(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return ""
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return hex.EncodeToString(d[:])
}

// idempotent makes a POST honour Idempotency-Key. The first request with a
// key runs; its answer (status, Content-Type, Location, body) is kept for
// PWSD_IDEMPOTENCY_TTL with the request's id and a SHA-256 digest of the
// request (method, path, query, Content-Type, Accept, caller and body; never
// the body itself). A repeat with the same digest gets that answer again,
// marked Idempotent-Replayed: true with the first request's id in
// Idempotent-Original-Request-Id, and runs nothing, so charges nothing; a repeat
// with another digest is a 422. A repeat arriving while the first runs waits
// for its answer. An answer with a 5xx status is not kept: the request
// changed nothing and may be retried with the same key.
func (h *handler) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, present := r.Header[http.CanonicalHeaderKey(IdempotencyKeyHeader)]
		if !present {
			next.ServeHTTP(w, r)
			return
		}
		if len(raw) != 1 || !validIdempotencyKey(raw[0]) {
			writeProblem(w, newProblem(http.StatusBadRequest, "the Idempotency-Key header must appear once and hold 1 to 255 visible ASCII characters",
				FieldError{Field: IdempotencyKeyHeader, Message: "must appear once and hold 1 to 255 visible ASCII characters"}))
			return
		}
		identity := callerIdentity(r)
		scope := sha256.Sum256([]byte("pwsd idempotency key\x00" + identity + "\x00" + raw[0]))
		key := hex.EncodeToString(scope[:])

		digest := sha256.New()
		for _, part := range []string{"pwsd idempotent request v1", r.Method, r.URL.Path, r.URL.RawQuery,
			r.Header.Get("Content-Type"), r.Header.Get("Accept"), identity} {
			digest.Write([]byte(part))
			digest.Write([]byte{0})
		}

		claim, err := h.svc.Idempotency.Begin(r.Context(), key)
		if err != nil {
			h.idempotencyError(w, r, err)
			return
		}
		if !claim.Reserved {
			if _, err := io.Copy(digest, r.Body); err != nil {
				writeProblem(w, bodyReadProblem(err))
				return
			}
			if !bytes.Equal(digest.Sum(nil), claim.RequestHash) {
				writeProblem(w, invalid(IdempotencyKeyHeader, "was already used with a different request (method, path, query, media types or body); use a new key for a new request"))
				return
			}
			replay(w, claim.Answer)
			return
		}

		body := &hashingBody{ReadCloser: r.Body, h: digest}
		r.Body = body
		rec := &recorder{ResponseWriter: w}
		finished := false
		defer func() {
			if !finished { // a panic: free the key and let the recoverer answer
				h.abandon(r, claim)
			}
		}()
		next.ServeHTTP(rec, r)
		// Hash what the handler left unread, so the digest covers the body.
		_, drainErr := io.Copy(io.Discard, body)
		finished = true
		status := rec.statusCode()
		if status >= 500 || (drainErr != nil && status >= 300) {
			h.abandon(r, claim)
			return
		}
		a := service.IdempotentAnswer{Status: status, Body: rec.body.Bytes(), Ref: rec.Header().Get("Location"),
			Header: map[string]string{OriginalRequestIDHeader: middleware.GetReqID(r.Context())}}
		for _, k := range keptHeaders {
			if v := rec.Header().Get(k); v != "" {
				a.Header[k] = v
			}
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		if err := h.svc.Idempotency.Finish(ctx, claim, digest.Sum(nil), a); err != nil {
			// The answer is sent; a repeat will find the key in progress
			// until the lease ends, then abandoned: never run twice.
			h.log.Error("recording an idempotent answer failed", "route", routePattern(r), "request_id", middleware.GetReqID(r.Context()), "error", err)
		}
	})
}

// abandon frees the key of claim, whose request changed nothing.
func (h *handler) abandon(r *http.Request, claim *service.IdempotencyClaim) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	if err := h.svc.Idempotency.Abandon(ctx, claim); err != nil {
		h.log.Error("freeing an idempotency key failed", "route", routePattern(r), "error", err)
	}
}

// idempotencyError answers a key that cannot run or replay now.
func (h *handler) idempotencyError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, service.ErrIdempotencyInProgress), errors.Is(err, service.ErrIdempotencyAbandoned):
		writeProblem(w, newProblem(http.StatusConflict, err.Error()))
	default:
		h.writeErr(w, r, err)
	}
}

// bodyReadProblem maps an error reading a request body.
func bodyReadProblem(err error) *Problem {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(mbe.Limit)
	}
	return newProblem(http.StatusBadRequest, "the request body could not be read")
}

// replay writes a recorded answer.
func replay(w http.ResponseWriter, a *service.IdempotentAnswer) {
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set(ReplayedHeader, "true")
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body)
}

// hashingBody feeds every byte read from a request body to h.
type hashingBody struct {
	io.ReadCloser
	h hash.Hash
}

// Read reads from the body and hashes what it read.
func (b *hashingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.h.Write(p[:n])
	return n, err
}

// recorder passes an answer to the client and keeps a copy. Writes always
// succeed towards the handler, so that a client that goes away does not cut
// the recorded answer short.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	failed bool
}

// WriteHeader sends and records the status once.
func (rw *recorder) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
		rw.ResponseWriter.WriteHeader(code)
	}
}

// Write records p and sends it while the client still reads.
func (rw *recorder) Write(p []byte) (int, error) {
	if rw.status == 0 {
		rw.WriteHeader(http.StatusOK)
	}
	rw.body.Write(p)
	if !rw.failed {
		if _, err := rw.ResponseWriter.Write(p); err != nil {
			rw.failed = true
		}
	}
	return len(p), nil
}

func (rw *recorder) statusCode() int {
	if rw.status == 0 {
		return http.StatusOK
	}
	return rw.status
}

// notIdempotent refuses an Idempotency-Key on a POST whose answer may not
// be kept (an announced intrusion answers the internal state, which must
// not outlive the re-randomization), rather than ignoring it.
func notIdempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header[http.CanonicalHeaderKey(IdempotencyKeyHeader)]; ok {
			writeProblem(w, newProblem(http.StatusBadRequest, "this request does not take an Idempotency-Key: its answer (the pan-private state before re-randomization) is never kept",
				FieldError{Field: IdempotencyKeyHeader, Message: "is not allowed on this route"}))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// redactAnswers replaces the recorded answers of the request that created
// the resource at ref (just deleted): a repeat of it then gets a 409 saying
// so, and is still not run again. A failure is logged: the answers then
// expire with PWSD_IDEMPOTENCY_TTL.
func (h *handler) redactAnswers(r *http.Request, ref string) {
	// The 409 is produced by this DELETE: it carries the DELETE's id.
	id := middleware.GetReqID(r.Context())
	p := newProblem(http.StatusConflict, "the resource the first request with this Idempotency-Key created has been deleted; its answer is no longer kept and the request is not run again")
	p.RequestID = id
	body, _ := json.Marshal(p)
	a := service.IdempotentAnswer{Status: p.Status, Body: append(body, '\n'),
		Header: map[string]string{"Content-Type": "application/problem+json", OriginalRequestIDHeader: id}}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	if err := h.svc.Idempotency.Redact(ctx, ref, a); err != nil {
		h.log.Error("redacting idempotent answers failed", "route", routePattern(r), "error", err)
	}
}
