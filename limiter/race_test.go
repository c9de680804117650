//go:build race

package limiter_test

// raceEnabled scales down the heaviest tests under the race detector, which
// slows map-heavy code about tenfold.
const raceEnabled = true
