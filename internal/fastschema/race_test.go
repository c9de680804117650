//go:build race

package fastschema

// raceEnabled: under the race detector sync.Pool drops entries at random, so
// pooled scratch space is rebuilt now and then and allocation counts are
// not meaningful.
const raceEnabled = true
