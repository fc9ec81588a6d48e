package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
)

// Upload stores a written release in pwsd (POST /v1/samples:import): the
// header line at meta, then every line of the shards PREFIX-SSSSS-of-NNNNN
// (empty shards are not written and are skipped), read through Beam's
// filesystems. The release must carry the ref of the charge made for it.
// It returns the stored sample's id.
func Upload(ctx context.Context, baseURL, token, meta, prefix string, shards int) (string, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(copyRelease(ctx, pw, meta, prefix, shards)) }()
	res, err := post(ctx, baseURL, "/v1/samples:import", token, "application/x-ndjson", pr)
	if err != nil {
		pr.Close()
		return "", fmt.Errorf("uploading the release: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return "", fmt.Errorf("uploading the release: %w", answerError(res.StatusCode, b))
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<30)).Decode(&v); err != nil || v.ID == "" {
		return "", fmt.Errorf("uploading the release: unexpected answer from pwsd")
	}
	return v.ID, nil
}

// copyRelease writes the header line and the shards' lines to w.
func copyRelease(ctx context.Context, w io.Writer, meta, prefix string, shards int) error {
	copyFile := func(name string, mustExist bool) error {
		fs, err := filesystem.New(ctx, name)
		if err != nil {
			return err
		}
		defer fs.Close()
		if !mustExist {
			if files, err := fs.List(ctx, name); err != nil || len(files) == 0 {
				return err
			}
		}
		r, err := fs.OpenRead(ctx, name)
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		defer r.Close()
		if _, err := io.Copy(w, r); err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		return nil
	}
	if err := copyFile(meta, true); err != nil {
		return err
	}
	for i := range shards {
		if err := copyFile(ShardName(prefix, i, shards), false); err != nil {
			return err
		}
	}
	return nil
}

// answerError describes a pwsd error answer (problem+json) without its
// body beyond the title, detail and field names.
func answerError(status int, b []byte) error {
	var pr struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
		Errors []struct {
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	_ = json.Unmarshal(b, &pr)
	var fields bytes.Buffer
	for _, e := range pr.Errors {
		fmt.Fprintf(&fields, "; %s %s", e.Field, e.Message)
	}
	return fmt.Errorf("pwsd answered %d %s: %s%s", status, pr.Title, pr.Detail, fields.String())
}
