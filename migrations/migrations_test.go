package migrations

import (
	"io/fs"
	"testing"
)

// TestHeadIsNewestFile: Head is the highest NNNN of the embedded up files,
// and every up file has its down file.
func TestHeadIsNewestFile(t *testing.T) {
	if got := Head(); got != 6 {
		t.Errorf("Head() = %d, want 6 (0006_table_cache_digest.up.sql is the newest)", got)
	}
	ups, _ := fs.Glob(FS, "*.up.sql")
	downs, _ := fs.Glob(FS, "*.down.sql")
	if len(ups) != int(Head()) || len(downs) != len(ups) {
		t.Errorf("%d up and %d down files for head %d", len(ups), len(downs), Head())
	}
}
