package api

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/pwsd/pwsd/internal/service"
)

// Role is what a token may do: a writer may do everything, a reader only GET.
type Role string

// The two roles of PWSD_API_TOKENS_FILE.
const (
	RoleWriter Role = "writer"
	RoleReader Role = "reader"
)

// Tokens is the set of API bearer tokens, read from a tokens file and
// reloaded from it on demand (Reload; pwsd reloads on SIGHUP). Tokens are
// held as SHA-256 digests and compared in constant time; they are never
// logged.
type Tokens struct {
	path string
	set  atomic.Pointer[[]tokenEntry]
}

type tokenEntry struct {
	digest   [32]byte
	role     Role
	datasets []string // a writer limited to these datasets; nil: every one
}

// tokensFile is the tokens file: {"tokens":[{"token":"...","role":"writer"|"reader",
// "datasets":["name",...]}]}; datasets (writers only, optional) limits what the
// token may change to the resources of the named datasets.
type tokensFile struct {
	Tokens []struct {
		Token    string   `json:"token"`
		Role     Role     `json:"role"`
		Datasets []string `json:"datasets"`
	} `json:"tokens"`
}

// LoadTokens reads a tokens file (see tokensFile and docs/operations.md).
func LoadTokens(path string) (*Tokens, error) {
	t := &Tokens{path: path}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// Reload reads the tokens file again and, when it is valid, replaces the
// tokens atomically: requests already authorised finish under the old set,
// later ones are checked against the new one. An invalid file changes
// nothing and returns the reason (no token in it).
func (t *Tokens) Reload() error {
	entries, err := readTokens(t.path)
	if err != nil {
		return err
	}
	t.set.Store(&entries)
	return nil
}

func readTokens(path string) ([]tokenEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tokens file: %w", err)
	}
	var f tokensFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parsing tokens file: %w", err)
	}
	if len(f.Tokens) == 0 {
		return nil, fmt.Errorf("tokens file lists no tokens")
	}
	var entries []tokenEntry
	first := map[[32]byte]int{}
	for i, e := range f.Tokens {
		if utf8.RuneCountInString(e.Token) < 16 {
			return nil, fmt.Errorf("tokens file: token %d is shorter than 16 characters", i)
		}
		if e.Role != RoleWriter && e.Role != RoleReader {
			return nil, fmt.Errorf("tokens file: token %d has role %q, want writer or reader", i, e.Role)
		}
		if e.Datasets != nil && e.Role != RoleWriter {
			return nil, fmt.Errorf("tokens file: token %d is a reader with datasets; only a writer's changes are limited to datasets", i)
		}
		if e.Datasets != nil && len(e.Datasets) == 0 {
			return nil, fmt.Errorf("tokens file: token %d lists no datasets; omit \"datasets\" for a writer of every dataset", i)
		}
		for j, name := range e.Datasets {
			if !datasetNameRE.MatchString(name) {
				return nil, fmt.Errorf("tokens file: token %d: datasets[%d] is not a dataset name (1-128 of A-Z a-z 0-9 . _ -)", i, j)
			}
		}
		d := sha256.Sum256([]byte(e.Token))
		if j, dup := first[d]; dup {
			if f.Tokens[j].Role != e.Role || !slices.Equal(f.Tokens[j].Datasets, e.Datasets) {
				return nil, fmt.Errorf("tokens file: token %d repeats token %d with a different role or datasets; list each token once", i, j)
			}
			continue
		}
		first[d] = i
		entries = append(entries, tokenEntry{digest: d, role: e.Role, datasets: slices.Clone(e.Datasets)})
	}
	return entries, nil
}

// lookup returns the entry of token, comparing against every entry in
// constant time so that timing reveals neither the token nor its position.
func (t *Tokens) lookup(token string) (tokenEntry, bool) {
	d := sha256.Sum256([]byte(token))
	var found tokenEntry
	ok := 0
	for _, e := range *t.set.Load() {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			found = e
			ok = 1
		}
	}
	return found, ok == 1
}

// middleware enforces the tokens on /v1; a nil *Tokens allows everything.
// Requests of reader tokens carry readerWork as their table-work bound
// (service.WithWorkLimit, PWSD_MAX_READER_TABLE_WORK).
func (t *Tokens) middleware(log *slog.Logger, readerWork int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if t == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			token = strings.TrimLeft(token, " ")
			if !strings.EqualFold(scheme, "Bearer") || token == "" { // RFC 9110: the scheme is case-insensitive
				w.Header().Set("WWW-Authenticate", `Bearer realm="pwsd"`)
				writeProblem(w, newProblem(http.StatusUnauthorized, "a bearer token is required"))
				return
			}
			entry, ok := t.lookup(token)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="pwsd", error="invalid_token"`)
				writeProblem(w, newProblem(http.StatusUnauthorized, "the bearer token is not valid"))
				return
			}
			if entry.datasets != nil {
				r = r.WithContext(service.WithDatasetScope(r.Context(), entry.datasets))
			}
			if entry.role == RoleReader {
				if r.Method != http.MethodGet && r.Method != http.MethodHead {
					writeProblem(w, newProblem(http.StatusForbidden, "a reader token may only read"))
					return
				}
				r = r.WithContext(service.WithWorkLimit(r.Context(), readerWork, "PWSD_MAX_READER_TABLE_WORK"))
			}
			next.ServeHTTP(w, r)
		})
	}
}
