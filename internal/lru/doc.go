// Package lru is a least-recently-used cache bounded by the total cost of
// its entries (bytes, or 1 per entry for a count bound). It is safe for
// concurrent use.
//
// Cache is generic in its key and value types; New takes the capacity and a
// function giving the cost of a value. Adding an entry evicts the least
// recently used ones until the total cost fits again; an entry that costs
// more than the capacity is not kept. The service caches its
// data-independent estimator tables and its table lookups in it.
package lru
