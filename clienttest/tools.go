// Package clienttest generates Go clients of pwsd from its OpenAPI
// document with two generators pinned in this module's go.mod, oapi-codegen
// (client/) and ogen (ogenclient/, a strict generator that refuses what it
// cannot generate exactly), and runs a workflow through each against the
// real router: the document is a contract a generated client can rely on.
package clienttest
