package planner

import (
	"errors"
	"strings"

	"github.com/pwsd/pwsd/internal/checks"
)

// addErr records err in ve: its field errors when it holds any, else its
// text (without the estimate package's prefix) under field.
func addErr(ve *checks.Errors, field string, err error) {
	if _, ok := checks.Fields(err); !ok && err != nil {
		err = errors.New(strings.TrimPrefix(err.Error(), "estimate: "))
	}
	ve.AddErr(field, err)
}
