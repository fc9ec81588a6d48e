package migrations

import "embed"

// FS holds the numbered up/down SQL files.
//
//go:embed *.sql
var FS embed.FS

// Head is the version of the newest migration; /readyz requires the database
// to be at this version and clean.
const Head = 6
