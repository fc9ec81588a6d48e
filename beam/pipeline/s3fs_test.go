package pipeline

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// fakeS3 starts an in-process S3 fake (gofakes3) with one bucket and
// points the AWS SDK's default configuration at it by a DNS name
// (http://localhost:PORT, as an S3-compatible store such as MinIO is
// usually reached), with static credentials and no shared config files.
func fakeS3(t *testing.T, bucket string) *s3mem.Backend {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL":            "http://localhost:" + port,
		"AWS_REGION":                  "us-east-1",
		"AWS_ACCESS_KEY_ID":           "pwsd-test",
		"AWS_SECRET_ACCESS_KEY":       "pwsd-test-secret",
		"AWS_CONFIG_FILE":             filepath.Join(t.TempDir(), "none"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	return backend
}

// putObject stores body at bucket/key in the fake.
func putObject(t *testing.T, b *s3mem.Backend, bucket, key string, body []byte) {
	t.Helper()
	if _, err := b.PutObject(bucket, key, nil, bytes.NewReader(body), int64(len(body)), nil); err != nil {
		t.Fatal(err)
	}
}

// getObject is the content of bucket/key in the fake, or nil when absent.
func getObject(t *testing.T, b *s3mem.Backend, bucket, key string) []byte {
	t.Helper()
	o, err := b.GetObject(bucket, key, nil)
	if err != nil {
		return nil
	}
	defer o.Contents.Close()
	body, err := io.ReadAll(o.Contents)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestS3CompatibleStore runs the pipeline with its input (a glob over two
// of three objects), its seed and its output on an S3-compatible store
// reached by a DNS name (gofakes3 at http://localhost:PORT). With
// S3PathStyle (--s3-path-style) the shards are byte-identical to a run on
// local files with the same seed, and the run read exactly the matched
// objects' records; without it the SDK addresses pwsd-bucket.localhost,
// which is not the store, and the run fails in preflight having written
// nothing.
func TestS3CompatibleStore(t *testing.T) {
	const bucket = "pwsd-bucket"
	store := fakeS3(t, bucket)
	seed := bytes.Repeat([]byte{7}, 16)
	putObject(t, store, bucket, "seed.hex", []byte(hex.EncodeToString(seed)+"\n"))
	base, local, records := storeInputs(t, seed, func(name string, body []byte) { putObject(t, store, bucket, name, body) })
	shards := base.Shards

	for _, tc := range []struct {
		name      string
		pathStyle bool
		ok        bool
	}{
		{"virtual-hosted (the SDK's default)", false, false},
		{"path-style", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			out := "out-" + fmt.Sprint(tc.pathStyle) + "/s"
			c.Input, c.SeedURI, c.Output, c.S3PathStyle = "s3://"+bucket+"/in/part-*.ndjson", "s3://"+bucket+"/seed.hex", "s3://"+bucket+"/"+out, tc.pathStyle
			sum, err := Run(context.Background(), c)
			if !tc.ok {
				if err == nil {
					t.Fatal("the run succeeded without path-style addressing: the test does not exercise it")
				}
				for i := range shards {
					if getObject(t, store, bucket, ShardName(out, i, shards)) != nil {
						t.Fatalf("a failed run wrote shard %d", i)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sameAsLocal(t, sum, records, local, out, func(name string) []byte { return getObject(t, store, bucket, name) })
		})
	}
}

// storeInputs writes the inputs of an object-store test through put: two
// NDJSON objects in/part-0.ndjson and in/part-1.ndjson (150 keys each, of
// frequencies 1 to 25, many above L(2, 1e-3) ~ 6) and in/notes.txt, which
// the glob in/part-*.ndjson leaves out. It runs the pipeline on local copies
// of the two parts with seed and returns the configuration shared by the
// runs, the local run's configuration and the number of records in the
// matched objects.
func storeInputs(t *testing.T, seed []byte, put func(name string, body []byte)) (base, local Config, records int) {
	t.Helper()
	dir := t.TempDir()
	for part := range 2 {
		var lines []string
		for k := range 150 {
			for r := 0; r < 1+(7*k+part)%25; r++ {
				lines = append(lines, fmt.Sprintf(`{"key":"k%d"}`, k+100*part))
			}
		}
		body := []byte(strings.Join(lines, "\n") + "\n")
		put(fmt.Sprintf("in/part-%d.ndjson", part), body)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.ndjson", part)), body, 0o600); err != nil {
			t.Fatal(err)
		}
		records += len(lines)
	}
	put("in/notes.txt", []byte("not an input\n"))
	base = Config{Privacy: sanitize.Privacy{Epsilon: 2, Delta: 1e-3}, Sampling: sanitize.Sampling{Scheme: sanitize.SchemeNone}, Shards: 2}
	local = base
	local.Input, local.Output, local.Seed = filepath.Join(dir, "part-*.ndjson"), filepath.Join(dir, "out", "s"), seed
	if _, err := Run(context.Background(), local); err != nil {
		t.Fatalf("local run: %v", err)
	}
	return base, local, records
}

// sameAsLocal checks a run on an object store: it read exactly the matched
// objects' records, reported keys, and wrote shards (read back by get, by
// object name under out) byte-identical to the local run's, and the header
// line (meta).
func sameAsLocal(t *testing.T, sum Summary, records int, local Config, out string, get func(name string) []byte) {
	t.Helper()
	if sum.Valid != int64(records) || sum.Invalid != 0 {
		t.Fatalf("read %d valid and %d invalid records, want the %d of the two matched objects", sum.Valid, sum.Invalid, records)
	}
	if sum.Reported == 0 {
		t.Fatal("no key reported: the comparison below would compare nothing")
	}
	for i := range local.Shards {
		want, err := os.ReadFile(ShardName(local.Output, i, local.Shards))
		if err != nil {
			t.Fatal(err)
		}
		if got := get(ShardName(out, i, local.Shards)); !bytes.Equal(got, want) {
			t.Fatalf("shard %d on the store (%d bytes) differs from the local run's (%d bytes)", i, len(got), len(want))
		}
	}
	if get(out+"-meta.json") == nil {
		t.Fatal("no header line (meta) on the store")
	}
}
