package pipeline

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
)

// Seed delivery.
//
// The secret seed keys every sampling decision: whoever holds it can tell,
// for any key, whether its frequency made it pass the threshold. It must
// therefore reach the workers without being part of anything a runner
// stores: Beam copies every command-line flag into the job's pipeline
// options, and every DoFn field into the pipeline proto, and runners keep
// both (Dataflow shows them in its console, Flink and Spark in their job
// history). So the pipeline carries only the seed's location (SeedURI, a
// path or URL on a filesystem registered with Beam: a shared directory,
// gs://, s3://), and each worker reads the seed from there in Setup.
//
// Without a location the seed (given, or fresh from crypto/rand) is placed
// in Beam's in-memory filesystem (memfs://) for the duration of the run,
// which only workers inside the submitting process can read: that is
// allowed only for runners whose workers run in this process (prism or
// direct without a job endpoint, or any runner with
// --environment_type=LOOPBACK). Every other run must name a location.

// minSeedBytes is the shortest accepted seed (128 bits).
const minSeedBytes = 16

// maxSeedFileBytes bounds what is read from a seed location.
const maxSeedFileBytes = 4096

// ParseSeed decodes a hex seed of at least 16 bytes.
func ParseSeed(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("the seed must be hex")
	}
	if len(b) < minSeedBytes {
		return nil, fmt.Errorf("the seed must hold at least %d bytes (%d hex digits)", minSeedBytes, 2*minSeedBytes)
	}
	return b, nil
}

// ReadSeed reads the seed stored at uri (hex, surrounding white space
// ignored) through Beam's filesystem registry, as every worker does. Errors
// name the location, never the content.
func ReadSeed(ctx context.Context, uri string) ([]byte, error) {
	fs, err := filesystem.New(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("seed location %s: %w", uri, err)
	}
	defer fs.Close()
	r, err := fs.OpenRead(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("reading the seed at %s: %w", uri, err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxSeedFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the seed at %s: %w", uri, err)
	}
	if len(b) > maxSeedFileBytes {
		return nil, fmt.Errorf("the seed at %s is longer than %d bytes", uri, maxSeedFileBytes)
	}
	seed, err := ParseSeed(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("the seed at %s: %w", uri, err)
	}
	return seed, nil
}

// WorkersInProcess reports whether the workers of runner run inside this
// process (so that they can read a memfs:// seed): prism or direct without
// a job endpoint (prism then defaults to LOOPBACK), or LOOPBACK.
func WorkersInProcess(runner string) bool {
	env := strings.ToLower(*jobopts.EnvironmentType)
	switch runner {
	case "direct", "DirectRunner":
		return true
	case "prism", "PrismRunner":
		if *jobopts.Endpoint == "" && (env == "" || env == "loopback") {
			return true
		}
	}
	return env == "loopback"
}

// placeSeed puts seed in Beam's in-memory filesystem under a fresh name and
// returns its location and a function removing it.
func placeSeed(ctx context.Context, seed []byte) (string, func()) {
	uri := "memfs://pwsd-seed-" + newID()
	memfs.Write(uri, []byte(hex.EncodeToString(seed)))
	remove := func() {
		fs, err := filesystem.New(ctx, uri)
		if err != nil {
			return
		}
		defer fs.Close()
		if rm, ok := fs.(filesystem.Remover); ok {
			_ = rm.Remove(ctx, uri)
		}
	}
	return uri, remove
}
