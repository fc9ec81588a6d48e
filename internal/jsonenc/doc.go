// Package jsonenc holds the allocation-free JSON pieces pwsd's streamed
// answers are built from, shared by the service's NDJSON writer and the Beam
// pipeline so that both write byte-identical elements.
//
// AppendString appends a string as a JSON string literal to a byte slice the
// caller reuses, escaping exactly as encoding/json does by default (the quote,
// the backslash, control characters, the HTML-sensitive <, > and &, U+2028
// and U+2029, invalid UTF-8), without
// reflection; writing a million-element sample then does not allocate per
// element.
//
// DecodeStrict is the one strict reader of the JSON pwsd stores (stored
// formats, cached JSON tables): exactly one value, no unknown member, no
// trailing data.
package jsonenc
