package migrations

import (
	"errors"
	"io"
	"io/fs"
	"testing"

	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// TestHeadIsNewestFile: Head is the last version golang-migrate itself
// finds in the embedded files (walking First, Next... as it does when it
// migrates), versions run 1, 2, ... Head without a gap, and every version
// has its up and its down file. Adding a migration changes no test.
func TestHeadIsNewestFile(t *testing.T) {
	src, err := iofs.New(FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	v, err := src.First()
	if err != nil {
		t.Fatal(err)
	}
	for want := uint(1); ; want++ {
		if v != want {
			t.Fatalf("migration %d follows %d: versions must run 1, 2, 3... without a gap", v, want-1)
		}
		for dir, read := range map[string]func(uint) (io.ReadCloser, string, error){"up": src.ReadUp, "down": src.ReadDown} {
			r, _, err := read(v)
			if err != nil {
				t.Errorf("migration %d has no %s file: %v", v, dir, err)
				continue
			}
			r.Close()
		}
		next, err := src.Next(v)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		v = next
	}
	if Head() != v {
		t.Errorf("Head() = %d, want %d, the newest version golang-migrate finds", Head(), v)
	}
	ups, _ := fs.Glob(FS, "*.up.sql")
	downs, _ := fs.Glob(FS, "*.down.sql")
	if len(ups) != int(Head()) || len(downs) != len(ups) {
		t.Errorf("%d up and %d down files for head %d", len(ups), len(downs), Head())
	}
}
