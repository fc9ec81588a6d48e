package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// Charge charges (epsilon, delta) to dataset on the pwsd at baseURL
// (POST /v1/datasets/{name}/charges) and returns the ledger ref. A 409
// (overspend) returns ErrBudget.
func Charge(ctx context.Context, baseURL, token, dataset string, p sanitize.Privacy, description string) (string, error) {
	body, err := json.Marshal(map[string]any{"epsilon": p.Epsilon, "delta": p.Delta, "description": description})
	if err != nil {
		return "", fmt.Errorf("encoding the charge: %w", err)
	}
	res, err := post(ctx, baseURL, "/v1/datasets/"+url.PathEscape(dataset)+"/charges", token, "application/json", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("charging the release: %w", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	switch res.StatusCode {
	case http.StatusCreated:
		var v struct {
			Ref string `json:"ref"`
		}
		if err := json.Unmarshal(b, &v); err != nil || v.Ref == "" {
			return "", fmt.Errorf("charging the release: unexpected answer from pwsd")
		}
		return v.Ref, nil
	case http.StatusConflict:
		return "", ErrBudget
	default:
		return "", fmt.Errorf("charging the release: %w; nothing was written", answerError(res.StatusCode, b))
	}
}

// post sends body to path on the pwsd at baseURL, with the bearer token
// when there is one.
func post(ctx context.Context, baseURL, path, token, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(baseURL, "/")+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return http.DefaultClient.Do(req)
}
