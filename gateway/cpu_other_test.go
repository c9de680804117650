//go:build !unix

package gateway

import "time"

// processUsage is 0 where getrusage is not available: the benchmarks'
// CPU figures are then 0.
func processUsage() (user, sys time.Duration, switches int64) { return 0, 0, 0 }
