package api

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pwsd/pwsd/internal/checks"
)

// elementLines remembers the body line each element of an NDJSON or CSV
// upload came from, so that errors the service reports about elements once
// it has read them all (the release's total work) name their lines too.
type elementLines struct {
	csv   bool
	lines []int32 // lines[i]: the line of element i
}

// add records that the next element came from line.
func (l *elementLines) add(line int) {
	if l != nil {
		l.lines = append(l.lines, int32(line))
	}
}

// annotate returns err with the line of every field error that names an
// element ("elements[i]...."): for NDJSON in the error's line member, for
// CSV in its message, as the parsers' own element errors. Other errors are
// returned as they are.
func (l *elementLines) annotate(err error) error {
	fs, ok := checks.Fields(err)
	var p *Problem
	if l == nil || !ok || errors.As(err, &p) {
		return err
	}
	p = fieldsProblem("", fs)
	for n, fe := range p.Errors {
		rest, found := strings.CutPrefix(fe.Field, "elements[")
		if !found {
			continue
		}
		end := strings.IndexByte(rest, ']')
		i, perr := strconv.Atoi(rest[:max(end, 0)])
		if end < 0 || perr != nil || i < 0 || i >= len(l.lines) {
			continue
		}
		if l.csv {
			p.Errors[n].Message = fmt.Sprintf("%s (CSV line %d)", fe.Message, l.lines[i])
		} else {
			p.Errors[n].Line = int(l.lines[i])
		}
	}
	return p
}
