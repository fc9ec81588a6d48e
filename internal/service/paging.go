package service

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/store"
)

// Page limits of every listing.
const (
	defaultPageLimit = 100
	MaxPageLimit     = 1000
)

// Page asks for one page of a listing: up to Limit items (0 means
// defaultPageLimit) after Cursor, an opaque string from an earlier page's
// next cursor ("" for the first page).
type Page struct {
	Limit  int
	Cursor string
}

// cursor prefixes tie a cursor to the listing that issued it.
const (
	cursorSamples  = "s"
	cursorDatasets = "d"
	cursorStreams  = "t"
	cursorCounters = "c"
	cursorElements = "e"
)

// encodeCursor makes an opaque cursor for the position (t, id) of listing kind.
func encodeCursor(kind string, t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "." + strconv.FormatInt(t.UnixNano(), 10) + "." + id))
}

// errCursor is the answer to a cursor this server did not issue for the listing.
func errCursor() error { return fieldErr("cursor", CursorReason) }

// CursorReason is the reason of every refused cursor, forged, tampered or
// from another listing (the API refuses malformed ones before they reach
// the service with the same words).
const CursorReason = "is not a cursor this listing issued; pass next_cursor from the previous page as it is"

// decodeCursor reads a cursor of listing kind.
func decodeCursor(kind, s string) (store.Cursor, error) {
	if s == "" {
		return store.Cursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return store.Cursor{}, errCursor()
	}
	k, rest, ok1 := strings.Cut(string(b), ".")
	ns, id, ok2 := strings.Cut(rest, ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok1 || !ok2 || k != kind || err != nil || !checks.Identifier(id) {
		return store.Cursor{}, errCursor()
	}
	return store.Cursor{CreatedAt: time.Unix(0, n).UTC(), ID: id}, nil
}

// limit validates p.Limit.
func (p Page) limit() (int, error) {
	switch {
	case p.Limit == 0:
		return defaultPageLimit, nil
	case p.Limit < 1 || p.Limit > MaxPageLimit:
		return 0, fieldErr("limit", "must be an integer from 1 to %d", MaxPageLimit)
	}
	return p.Limit, nil
}

// pageOf runs a store listing for p, asking one item more than the limit to
// learn whether a next page exists; it returns the page and the next cursor
// ("" on the last page).
func pageOf[T any](p Page, kind string, list func(c store.Cursor, limit int) ([]T, error), pos func(T) (time.Time, string)) ([]T, string, error) {
	limit, err := p.limit()
	if err != nil {
		return nil, "", err
	}
	c, err := decodeCursor(kind, p.Cursor)
	if err != nil {
		return nil, "", err
	}
	items, err := list(c, limit+1)
	if err != nil {
		return nil, "", err
	}
	if len(items) <= limit {
		return items, "", nil
	}
	items = items[:limit]
	t, id := pos(items[limit-1])
	return items, encodeCursor(kind, t, id), nil
}
