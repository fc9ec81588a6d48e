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
		// The guard refuses a body with a scalar longer than a line or more
		// items than allowed while it streams, before the decoder holds it.
		g := &jsonGuard{r: r.Body, maxScalar: lim.MaxLineBytes, maxItems: max,
			tooLong: newProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("a JSON string or number is longer than %d bytes (PWSD_MAX_LINE_BYTES)", lim.MaxLineBytes)),
			tooMany: tooMany}
		items, err := object(g)
		if g.err != nil {
			return nil, g.err
		}
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

// jsonGuard passes a JSON body through while scanning it: it fails the read
// (err is then a problem) as soon as one string or bare scalar exceeds
// maxScalar bytes, or an array directly inside the top-level object holds
// more than maxItems elements. The decoder thus never buffers a 200 MB user
// name or millions of events before the limits are checked.
type jsonGuard struct {
	r         io.Reader
	maxScalar int
	maxItems  int
	tooLong   error
	tooMany   error
	err       error

	depth    int  // container nesting depth
	inString bool // inside a string
	escaped  bool // after a backslash inside a string
	run      int  // bytes of the current string or bare scalar
	items    int  // commas at depth 2 (elements of the top-level arrays, minus one each)
	nonEmpty bool // the current depth-2 array has an element
}

func (g *jsonGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	for _, c := range p[:n] {
		if g.inString {
			switch {
			case g.escaped:
				g.escaped = false
			case c == '\\':
				g.escaped = true
			case c == '"':
				g.inString = false
				g.run = 0
				continue
			}
			g.run++
		} else {
			switch c {
			case '"':
				g.inString, g.run = true, 0
				g.markItem()
			case '{', '[':
				g.markItem()
				g.depth++
				if g.depth == 2 {
					g.nonEmpty = false
				}
				g.run = 0
			case '}', ']':
				g.depth--
				g.run = 0
			case ',':
				if g.depth == 2 {
					g.items++
				}
				g.run = 0
			case ' ', '\t', '\n', '\r', ':':
				g.run = 0
			default:
				g.markItem()
				g.run++
			}
		}
		if g.run > g.maxScalar {
			g.err = g.tooLong
		} else if g.items+1 > g.maxItems && g.nonEmpty {
			g.err = g.tooMany
		}
		if g.err != nil {
			return 0, g.err
		}
	}
	return n, err
}

// markItem notes that the current depth-2 array has an element.
func (g *jsonGuard) markItem() {
	if g.depth == 2 {
		g.nonEmpty = true
	}
}
