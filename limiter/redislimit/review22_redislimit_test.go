package redislimit_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
)

// TestReview22AboveMaxNeverFits: a call taking more units than a limit's
// Max never fits (see [limiter.Limit]; the denial's RetryAfter is zero).
// The script decided "never" on the rounded-down increment instead, so on
// Redis's microsecond ticks a call up to a millionth above Max (a one-second
// window) took a full bucket.
func TestReview22AboveMaxNeverFits(t *testing.T) {
	srv := testsvc.StartRedis(t)
	c := newClient(t, srv.Addr)
	t0 := time.Unix(1_700_000_000, 0)
	cases := []struct {
		limit limiter.Limit
		req   limiter.Request
	}{
		{limiter.Limit{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Second},
			limiter.Request{Session: "s", Cost: 10.000005}},
		{limiter.Limit{Kind: limiter.Rate, Scope: limiter.Session, Max: 1.9999999, Window: time.Second},
			limiter.Request{Session: "s", Calls: 2}},
	}
	for i, tc := range cases {
		for _, clientTime := range []bool{false, true} {
			s := redislimit.New(c, &redislimit.Options{Prefix: "r22-" + strconv.Itoa(i) + strconv.FormatBool(clientTime) + ":", ClientTime: clientTime, Timeout: testTimeout})
			l := newLimiter(t, s, nil, tc.limit)
			d := l.AllowAt(context.Background(), t0, tc.req)
			if d.Allowed || d.Err != nil || d.Limit != tc.limit || d.RetryAfter != 0 {
				t.Errorf("ClientTime %v: AllowAt(%+v) under %v on a full bucket = allowed %v, limit %v, retry %v, err %v; want denied by it, retry 0",
					clientTime, tc.req, tc.limit, d.Allowed, d.Limit, d.RetryAfter, d.Err)
			}
			l.Release(d)
		}
	}
}
