package pipeline

import (
	"bufio"
	"context"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
)

// ShardName is the name of shard i of n under prefix:
// prefix-00003-of-00008.ndjson.
func ShardName(prefix string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.ndjson", prefix, i, n)
}

// writeFn writes one shard: its lines sorted, so a shard's content depends
// only on the set of its lines (reruns with the same seed write the same
// bytes, and the order reveals nothing beyond the lines themselves). Empty
// shards are not written.
type writeFn struct {
	Prefix string `json:"prefix"`
	Shards int    `json:"shards"`
}

// ProcessElement writes shard i.
func (f *writeFn) ProcessElement(ctx context.Context, i int, lines func(*string) bool) error {
	var all []string
	var l string
	for lines(&l) {
		all = append(all, l)
	}
	slices.Sort(all)
	name := ShardName(f.Prefix, i, f.Shards)
	return writeOutput(ctx, name, "output shard", func(w *bufio.Writer) {
		for _, l := range all {
			w.WriteString(l)
			w.WriteByte('\n')
		}
	})
}

// writeOutput creates the file name through Beam's filesystem (local or
// remote), lets write fill it through a buffer, and flushes and closes it;
// what names the file in errors.
func writeOutput(ctx context.Context, name, what string, write func(*bufio.Writer)) error {
	fs, err := filesystem.New(ctx, name)
	if err != nil {
		return fmt.Errorf("opening output filesystem: %w", err)
	}
	defer fs.Close()
	fd, err := fs.OpenWrite(ctx, name)
	if err != nil {
		return fmt.Errorf("creating %s: %w", what, err)
	}
	w := bufio.NewWriterSize(fd, 1<<20)
	write(w)
	if err := w.Flush(); err != nil {
		fd.Close()
		return fmt.Errorf("writing %s: %w", what, err)
	}
	if err := fd.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", what, err)
	}
	return nil
}
