// Package storedformat is the service's side of the store boundary: the
// versioned JSON shapes of what pwsd keeps about its resources beside their
// data (a sample's header, a stream's and a counter's configuration).
//
// Every object carries its version in a "format" member (Format reads it);
// decoding is strict (unknown members and trailing data are errors) and
// reads the previous release's shape, format 1, which had no "format"
// member, for one release: the service's RewriteStoredFormats rewrites it at
// start-up. The shapes are their own structs, never the API's requests or
// answers, so an API change cannot change what is stored. docs/store.md
// lists them.
package storedformat
