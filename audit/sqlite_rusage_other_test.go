//go:build !unix

package audit_test

import "time"

// processCPU is not available here.
func processCPU() (time.Duration, bool) { return 0, false }
