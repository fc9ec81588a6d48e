package pipeline

// The s3:// filesystem. Beam's own (io/filesystem/s3) builds its client
// with the AWS SDK's defaults and no options, and the AWS SDK for Go v2
// reads no environment variable or shared-config setting for path-style
// addressing, so with an S3-compatible store behind a DNS name (MinIO,
// Ceph: AWS_ENDPOINT_URL=http://minio:9000) it asks for
// BUCKET.minio:9000, which does not exist. This one is the same
// filesystem (List, OpenRead, OpenWrite, Size, Remove; adapted from
// Beam's, Apache-2.0) with path-style addressing switched on by the
// pipeline option S3PathStyleOption (pwsd-beam --s3-path-style), which
// Beam hands to every worker with the job's other options.

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/fsx"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3PathStyleOption is the pipeline option (beam.PipelineOptions) that
// makes the s3:// filesystem address buckets by path
// (ENDPOINT/BUCKET/KEY) instead of by host name (BUCKET.ENDPOINT/KEY):
// "true" or "false" (absent: false). Run sets it from Config.S3PathStyle.
const S3PathStyleOption = "pwsd_s3_path_style"

func init() {
	filesystem.Register("s3", newS3FS)
}

// s3fs is the s3:// filesystem over one client.
type s3fs struct {
	client *s3.Client
}

// newS3FS builds the client from the AWS SDK's default configuration
// sources (AWS_REGION, AWS_ENDPOINT_URL, credentials, ~/.aws/config) and
// the pipeline option S3PathStyleOption. Beam's filesystem registry has
// no way to return an error: a configuration that cannot load, or an
// option that is not a boolean, fails at the first call instead.
func newS3FS(ctx context.Context) filesystem.Interface {
	pathStyle := false
	if v := beam.PipelineOptions.Get(S3PathStyleOption); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return brokenFS{fmt.Errorf("pipeline option %s=%q: want true or false", S3PathStyleOption, v)}
		}
		pathStyle = b
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return brokenFS{fmt.Errorf("loading the AWS configuration for s3://: %w", err)}
	}
	return &s3fs{client: s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = pathStyle })}
}

// splitS3 splits s3://BUCKET/KEY.
func splitS3(uri string) (bucket, key string, err error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", "", fmt.Errorf("s3 location %q: %w", uri, err)
	}
	if u.Scheme != "s3" || u.Host == "" {
		return "", "", fmt.Errorf("s3 location %q: want s3://BUCKET/KEY", uri)
	}
	if len(u.Path) > 0 {
		key = u.Path[1:]
	}
	return u.Host, key, nil
}

// List returns the s3:// URIs of the objects matching glob (a
// path.Match pattern over the key).
func (f *s3fs) List(ctx context.Context, glob string) ([]string, error) {
	bucket, pattern, err := splitS3(glob)
	if err != nil {
		return nil, err
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("s3 pattern %q: %w", glob, err)
	}
	pages := s3.NewListObjectsV2Paginator(f.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(fsx.GetPrefix(pattern))})
	var uris []string
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", glob, err)
		}
		for _, o := range page.Contents {
			if ok, _ := path.Match(pattern, aws.ToString(o.Key)); ok {
				uris = append(uris, "s3://"+bucket+"/"+aws.ToString(o.Key))
			}
		}
	}
	return uris, nil
}

// OpenRead opens an object for reading.
func (f *s3fs) OpenRead(ctx context.Context, name string) (io.ReadCloser, error) {
	bucket, key, err := splitS3(name)
	if err != nil {
		return nil, err
	}
	out, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return out.Body, nil
}

// OpenWrite opens an object for writing; it exists once Close returns nil.
func (f *s3fs) OpenWrite(ctx context.Context, name string) (io.WriteCloser, error) {
	bucket, key, err := splitS3(name)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	w := &s3writer{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		_, err := manager.NewUploader(f.client).Upload(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: pr})
		if err != nil {
			w.err = fmt.Errorf("writing %s: %w", name, err)
		}
		pr.CloseWithError(w.err) // unblocks a writer the upload stopped reading
	}()
	return w, nil
}

// Size is an object's length in bytes.
func (f *s3fs) Size(ctx context.Context, name string) (int64, error) {
	bucket, key, err := splitS3(name)
	if err != nil {
		return -1, err
	}
	out, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return -1, fmt.Errorf("size of %s: %w", name, err)
	}
	if out.ContentLength == nil {
		return -1, fmt.Errorf("size of %s: the store gave no length", name)
	}
	return *out.ContentLength, nil
}

// Remove deletes an object.
func (f *s3fs) Remove(ctx context.Context, name string) error {
	bucket, key, err := splitS3(name)
	if err != nil {
		return err
	}
	if _, err := f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		return fmt.Errorf("removing %s: %w", name, err)
	}
	return nil
}

// Close releases nothing: the client holds no open resources.
func (f *s3fs) Close() error { return nil }

// s3writer streams what is written into an upload through a pipe.
type s3writer struct {
	pw   *io.PipeWriter
	done chan struct{}
	err  error // the upload's, set before done closes
}

// Write passes p on to the upload.
func (w *s3writer) Write(p []byte) (int, error) { return w.pw.Write(p) }

// Close ends the object and waits for the upload to finish.
func (w *s3writer) Close() error {
	if err := w.pw.Close(); err != nil {
		return err
	}
	<-w.done
	return w.err
}

// brokenFS is a filesystem that could not be built: every call returns why.
type brokenFS struct{ err error }

// List fails.
func (b brokenFS) List(context.Context, string) ([]string, error) { return nil, b.err }

// OpenRead fails.
func (b brokenFS) OpenRead(context.Context, string) (io.ReadCloser, error) { return nil, b.err }

// OpenWrite fails.
func (b brokenFS) OpenWrite(context.Context, string) (io.WriteCloser, error) { return nil, b.err }

// Size fails.
func (b brokenFS) Size(context.Context, string) (int64, error) { return -1, b.err }

// Close has nothing to release.
func (b brokenFS) Close() error { return nil }

var _ filesystem.Remover = (*s3fs)(nil)
