package store

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestErrorClasses: IsUnavailable recognises every way the store can be
// out of reach (and nothing else), IsInvalidValue every error only a
// request's values cause; both see through wrapping.
func TestErrorClasses(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("query: %w", &pgconn.PgError{Code: code}) }
	for _, c := range []struct {
		name                 string
		err                  error
		unavailable, invalid bool
	}{
		{"nil", nil, false, false},
		{"ErrUnavailable", fmt.Errorf("x: %w", ErrUnavailable), true, false},
		{"unexpected EOF", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), true, false},
		{"closed network connection", fmt.Errorf("x: %w", net.ErrClosed), true, false},
		{"connect error", &pgconn.ConnectError{}, true, false},
		{"a net.Error", &net.OpError{Op: "dial", Err: errors.New("refused")}, true, false},
		{"connection exception 08006", pg("08006"), true, false},
		{"admin shutdown 57P01", pg("57P01"), true, false},
		{"crash shutdown 57P02", pg("57P02"), true, false},
		{"cannot connect now 57P03", pg("57P03"), true, false},
		{"too many connections 53300", pg("53300"), true, false},
		{"database does not exist 3D000", pg("3D000"), true, false},
		{"pgx's closed connection", errors.New("conn closed"), true, false},
		{"pgx's closed pool", errors.New("closed pool"), true, false},
		{"unique violation 23505", pg("23505"), false, false},
		{"serialization failure 40001", pg("40001"), false, false},
		{"invalid byte sequence 22021", pg("22021"), false, true},
		{"value too long 22001", pg("22001"), false, true},
		{"index row too large 54000", pg("54000"), false, true},
		{"ErrInvalidValue", fmt.Errorf("x: %w", ErrInvalidValue), false, true},
		{"ErrNotFound", ErrNotFound, false, false},
		{"ErrBudget", ErrBudget, false, false},
		{"another error", errors.New("boom"), false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := IsUnavailable(c.err); got != c.unavailable {
				t.Errorf("IsUnavailable(%v) = %v, want %v", c.err, got, c.unavailable)
			}
			if got := IsInvalidValue(c.err); got != c.invalid {
				t.Errorf("IsInvalidValue(%v) = %v, want %v", c.err, got, c.invalid)
			}
		})
	}
}

// TestCheckIDAndCursor: ids no resource can have are not found before any
// query; a cursor holding one is an invalid value, and the zero cursor is
// the start of every listing.
func TestCheckIDAndCursor(t *testing.T) {
	for _, c := range []struct {
		id string
		ok bool
	}{
		{"a", true}, {"sample-1_x.y", true}, {"é", true}, {strings.Repeat("a", 128), true},
		{"", false}, {"\xff", false}, {"a\x00", false}, {"\n", false}, {strings.Repeat("a", 129), false},
	} {
		if err := checkID(c.id); (err == nil) != c.ok || (!c.ok && !errors.Is(err, ErrNotFound)) {
			t.Errorf("checkID(%q) = %v, want ok %v", c.id, err, c.ok)
		}
		cur := Cursor{CreatedAt: time.Unix(1, 0), ID: c.id}
		if err := checkCursor(cur); (err == nil) != c.ok || (!c.ok && !IsInvalidValue(err)) {
			t.Errorf("checkCursor(%q) = %v, want ok %v", c.id, err, c.ok)
		}
	}
	if err := checkCursor(Cursor{}); err != nil {
		t.Errorf("zero cursor: %v", err)
	}
}

// TestMigrateURL: both libpq schemes become golang-migrate's pgx5 scheme,
// pgx's pool settings are dropped (the driver would send them to the server
// as unknown parameters) and every other parameter kept; anything else is
// passed through.
func TestMigrateURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@h:5432/db?sslmode=disable": "pgx5://u@h:5432/db?sslmode=disable",
		"postgresql://u@h/db":                    "pgx5://u@h/db",
		"pgx5://u@h/db":                          "pgx5://u@h/db",
		"host=h dbname=db":                       "host=h dbname=db",
		"postgres://u:p@h/db?pool_min_conns=2&sslmode=disable&pool_max_conn_lifetime=1h": "pgx5://u:p@h/db?sslmode=disable",
		"postgres://u@h/db?pool_max_conns=8":                                             "pgx5://u@h/db",
	} {
		if got := migrateURL(in); got != want {
			t.Errorf("migrateURL(%q) = %q, want %q", in, got, want)
		}
	}
}
