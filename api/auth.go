package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
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

// Tokens is the set of API bearer tokens. Tokens are held as SHA-256 digests
// and compared in constant time; they are never logged.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	digest [32]byte
	role   Role
}

// LoadTokens reads a tokens file: {"tokens":[{"token":"...","role":"writer"|"reader"}]}.
func LoadTokens(path string) (*Tokens, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tokens file: %w", err)
	}
	var f struct {
		Tokens []struct {
			Token string `json:"token"`
			Role  Role   `json:"role"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parsing tokens file: %w", err)
	}
	if len(f.Tokens) == 0 {
		return nil, fmt.Errorf("tokens file lists no tokens")
	}
	t := &Tokens{}
	first := map[[32]byte]int{}
	for i, e := range f.Tokens {
		if utf8.RuneCountInString(e.Token) < 16 {
			return nil, fmt.Errorf("tokens file: token %d is shorter than 16 characters", i)
		}
		if e.Role != RoleWriter && e.Role != RoleReader {
			return nil, fmt.Errorf("tokens file: token %d has role %q, want writer or reader", i, e.Role)
		}
		d := sha256.Sum256([]byte(e.Token))
		if j, dup := first[d]; dup {
			if f.Tokens[j].Role != e.Role {
				return nil, fmt.Errorf("tokens file: token %d repeats token %d with a different role; list each token once", i, j)
			}
			continue
		}
		first[d] = i
		t.entries = append(t.entries, tokenEntry{digest: d, role: e.Role})
	}
	return t, nil
}

// lookup returns the role of token, comparing against every entry in
// constant time so that timing reveals neither the token nor its position.
func (t *Tokens) lookup(token string) (Role, bool) {
	d := sha256.Sum256([]byte(token))
	var role Role
	found := 0
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			role = e.role
			found = 1
		}
	}
	return role, found == 1
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
			role, ok := t.lookup(token)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="pwsd", error="invalid_token"`)
				writeProblem(w, newProblem(http.StatusUnauthorized, "the bearer token is not valid"))
				return
			}
			if role == RoleReader {
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
