package migrations

import (
	"embed"
	"io/fs"
	"strconv"
	"strings"
)

// FS holds the numbered up/down SQL files.
//
//go:embed *.sql
var FS embed.FS

// Head returns the version of the newest migration, read from the embedded
// file names (NNNN_name.up.sql), so adding a migration is the one change;
// /readyz requires the database to be at this version and clean.
func Head() uint {
	entries, _ := fs.ReadDir(FS, ".") // embedded: cannot fail
	head := uint(0)
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if v, err := strconv.ParseUint(num, 10, 32); ok && err == nil && strings.HasSuffix(e.Name(), ".up.sql") {
			head = max(head, uint(v))
		}
	}
	return head
}
