package store

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
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
