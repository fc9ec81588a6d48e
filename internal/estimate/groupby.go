package estimate

import "strings"

// GroupKey returns the group of key for a group-by: with a non-empty
// delimiter, the part of the key before its first occurrence (the whole key
// when it has none); otherwise its first length characters (runes; the whole
// key when shorter). Groups are formed from reported keys only, so a group
// appears only if one of its keys was reported.
func GroupKey(key, delimiter string, length int) string {
	if delimiter != "" {
		g, _, _ := strings.Cut(key, delimiter)
		return g
	}
	n := 0
	for i := range key {
		if n == length {
			return key[:i]
		}
		n++
	}
	return key
}
