//go:build !race

package fastschema

const raceEnabled = false
