package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// readBatch reads a batch of at most max items: NDJSON with one item per
// line (parsed by line, which gets the item's index), or a JSON object
// decoded by object. what names the items in limit messages ("events").
func readBatch[T any](r *http.Request, lim Limits, max int, what string,
	line func(b []byte, i int) (T, error), object func(io.Reader) ([]T, error)) ([]T, error) {
	tooMany := newProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("a batch may hold at most %d %s (PWSD_MAX_EVENTS)", max, what))
	switch mediaType(r) {
	case "application/x-ndjson":
		var items []T
		lr := newLineReader(r.Body, lim.MaxLineBytes)
		for {
			b, err := lr.next()
			if errors.Is(err, io.EOF) {
				return items, nil
			}
			if err != nil {
				return nil, err
			}
			if len(items) >= max {
				return nil, tooMany
			}
			item, err := line(b, len(items))
			if err != nil {
				return nil, atLine(err, lr.n)
			}
			items = append(items, item)
		}
	case "application/json", "":
		items, err := object(r.Body)
		if err != nil {
			return nil, err
		}
		if len(items) > max {
			return nil, tooMany
		}
		return items, nil
	default:
		return nil, newProblem(http.StatusUnsupportedMediaType, "send application/json or application/x-ndjson")
	}
}
