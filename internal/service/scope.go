package service

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// A dataset scope limits what one request may change to the resources of
// named datasets: the API puts the datasets of a writer token limited to
// them (PWSD_API_TOKENS_FILE's "datasets") on its requests. Without a scope
// a request may change anything. docs/operations.md ("Tokens") says how an
// operator gives each team a token for its own datasets.

// scopeKey is the context key of a request's dataset scope.
type scopeKey struct{}

// WithDatasetScope returns ctx whose request may create, charge, release
// into, feed and delete the resources of the named datasets only. An empty
// list adds no scope.
func WithDatasetScope(ctx context.Context, datasets []string) context.Context {
	if len(datasets) == 0 {
		return ctx
	}
	return context.WithValue(ctx, scopeKey{}, slices.Clone(datasets))
}

// ScopeError refuses a change outside the request's dataset scope (the
// API's 403 naming Field). Dataset is "" for a resource of no dataset.
type ScopeError struct {
	Field   string   // the request field that names the resource or its dataset
	Dataset string   // the dataset asked for ("" for none)
	Allowed []string // the datasets the request may change
}

func (e *ScopeError) Error() string {
	allowed := "datasets " + strings.Join(quoteAll(e.Allowed), ", ")
	if e.Dataset == "" {
		return fmt.Sprintf("this token may change only the resources of %s; name one of them (a release, stream or counter of no dataset is outside its scope)", allowed)
	}
	return fmt.Sprintf("dataset %q is outside this token's scope: it may change only the resources of %s", e.Dataset, allowed)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// scoped reports whether ctx's request has a dataset scope.
func scoped(ctx context.Context) bool {
	_, ok := ctx.Value(scopeKey{}).([]string)
	return ok
}

// inScope returns a *ScopeError when ctx's request has a dataset scope
// that does not hold dataset ("" is never held: a scoped request changes
// only resources of its datasets); field names where the request said it.
func inScope(ctx context.Context, field, dataset string) error {
	allowed, ok := ctx.Value(scopeKey{}).([]string)
	if !ok || (dataset != "" && slices.Contains(allowed, dataset)) {
		return nil
	}
	return &ScopeError{Field: field, Dataset: dataset, Allowed: allowed}
}
