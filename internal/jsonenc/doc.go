// Package jsonenc holds the allocation-free JSON pieces pwsd's streamed
// answers are built from, shared by the service's NDJSON writer and the Beam
// pipeline so that both write byte-identical elements.
//
// AppendString appends a string as a JSON string literal to a byte slice the
// caller reuses, escaping the quote, the backslash, control characters and
// the HTML-sensitive <, > and & as encoding/json does by default, without
// reflection; writing a million-element sample then does not allocate per
// element.
package jsonenc
