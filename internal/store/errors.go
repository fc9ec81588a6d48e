package store

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pwsd/pwsd/internal/checks"
)

// Errors reported by every implementation. Wrapped errors match with errors.Is.
var (
	ErrNotFound = errors.New("store: not found")
	ErrExists   = errors.New("store: already exists")
	// ErrBudget means a charge would overspend its dataset's budget; nothing
	// was written.
	ErrBudget = errors.New("store: privacy budget exceeded")
)

// ErrUnavailable means the store could not be reached; the operation may
// succeed later. IsUnavailable recognises it and the drivers' equivalents.
var ErrUnavailable = errors.New("store: unavailable")

// IsUnavailable reports whether err means the store is unreachable rather
// than that the operation failed: a failed connection or pool acquisition,
// a dropped connection, the server shutting down or refusing connections,
// or a database that no longer exists.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, cannot connect now
			pe.Code == "53300", // too many connections
			pe.Code == "3D000": // database does not exist
			return true
		}
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	// pgx reports a connection it has already closed by text only.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool")
}

// ErrInvalidValue means a value could not be stored or compared as it is
// (text with NUL or invalid UTF-8, a value past a size limit): the request
// is at fault, not the store. IsInvalidValue recognises it and PostgreSQL's
// equivalents. Its text never carries the value.
var ErrInvalidValue = errors.New("store: a value of the request cannot be stored")

// IsInvalidValue reports whether err is ErrInvalidValue or a PostgreSQL
// data exception (SQLSTATE class 22: 22021 invalid byte sequence, 22P05
// untranslatable character, 22001 value too long...) or program limit
// (class 54: 54000 index row too large), which only the values of a
// request cause.
func IsInvalidValue(err error) bool {
	if errors.Is(err, ErrInvalidValue) {
		return true
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "54"))
}

// checkID returns ErrNotFound for an id no resource can have
// (checks.Identifier), so that it never reaches a query: the API refuses
// such ids first, and the stores refuse them again.
func checkID(id string) error {
	if !checks.Identifier(id) {
		return ErrNotFound
	}
	return nil
}

// checkCursor returns ErrInvalidValue for a cursor whose id no resource can
// have.
func checkCursor(c Cursor) error {
	if !c.IsZero() && !checks.Identifier(c.ID) {
		return ErrInvalidValue
	}
	return nil
}
