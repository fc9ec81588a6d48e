package pipeline

import (
	"bytes"
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// TestGCSEmulator runs the pipeline with its input (a glob over two of three
// objects), its seed and its output on gs:// served by an in-process
// Google Cloud Storage emulator (fake-gcs-server), reached the way the GCS
// client library reaches any emulator: STORAGE_EMULATOR_HOST=host:port
// (docs/scaleout.md). The shards are byte-identical to a run on local files
// with the same seed, and the run read exactly the matched objects'
// records.
//
// PublicHost 127.0.0.1 makes the emulator serve downloads at
// http://127.0.0.1:PORT/BUCKET/OBJECT, where the client library reads an
// emulator's objects (fake-gcs-server's own default is
// storage.googleapis.com; its CLI's -public-host).
func TestGCSEmulator(t *testing.T) {
	const bucket = "pwsd-bucket"
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", PublicHost: "127.0.0.1", Writer: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL(), "http://"))
	put := func(name string, body []byte) {
		srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: name}, Content: body})
	}
	get := func(name string) []byte {
		o, err := srv.GetObject(bucket, name)
		if err != nil {
			return nil
		}
		return o.Content
	}
	seed := bytes.Repeat([]byte{9}, 16)
	put("seed.hex", []byte(hex.EncodeToString(seed)+"\n"))
	base, local, records := storeInputs(t, seed, put)

	c := base
	const out = "out/s"
	c.Input, c.SeedURI, c.Output = "gs://"+bucket+"/in/part-*.ndjson", "gs://"+bucket+"/seed.hex", "gs://"+bucket+"/"+out
	sum, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	sameAsLocal(t, sum, records, local, out, get)
}
