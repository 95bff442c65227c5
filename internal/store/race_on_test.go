//go:build race

package store

// raceEnabled: the race detector makes SQLite (transpiled to Go) ~25x
// slower; long data-driven tests sample under it.
const raceEnabled = true
