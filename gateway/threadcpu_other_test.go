//go:build !linux

package gateway

import "time"

// threadCPU reports that the calling thread's CPU time cannot be read
// here: callers measure wall time instead.
func threadCPU() (time.Duration, bool) { return 0, false }
