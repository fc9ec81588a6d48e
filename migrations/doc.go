// Package migrations embeds pwsd's PostgreSQL schema migrations, applied by
// golang-migrate at start-up.
//
// Each schema change is a numbered pair of files, NNNN_name.up.sql and
// NNNN_name.down.sql; a migration is never edited once released, a new one
// is added instead. The PostgreSQL store applies every pending migration
// when it opens, so a server always runs on the schema its code expects.
package migrations
