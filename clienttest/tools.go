// Package clienttest generates a Go client of pwsd from its OpenAPI
// document with oapi-codegen (a tool pinned in this module's go.mod) and
// runs a workflow through it against the real router: the document is a
// contract a generated client can rely on.
package clienttest
