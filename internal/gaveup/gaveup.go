// Package gaveup tells whether a caller gave up on a request.
package gaveup

import (
	"context"
	"time"
)

// Err returns ctx's error, or context.DeadlineExceeded once ctx's deadline
// has passed though ctx does not say so yet: its timer can fire a moment
// after the deadline, and a client timing out at the same deadline (go-redis
// with ContextTimeoutEnabled, net/http) can answer first. Code that decides
// by it whether the caller is still waiting (fail open for a store that is
// down, send a request nobody would wait for) then decides alike at that
// moment.
func Err(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}
