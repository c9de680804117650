package redislimit

import (
	"testing"
	"time"
)

// TestReview25SubMicrosecondLease: a positive Lease under a microsecond is
// a microsecond, not the 5 minutes that the zero value means; a negative
// one is an error of the caller's that New cannot return, and means the
// default, as a non-positive Timeout does.
func TestReview25SubMicrosecondLease(t *testing.T) {
	for _, tc := range []struct {
		lease time.Duration
		want  int64
	}{
		{0, (5 * time.Minute).Microseconds()},
		{-time.Second, (5 * time.Minute).Microseconds()},
		{time.Nanosecond, 1},
		{999 * time.Nanosecond, 1},
		{1500 * time.Nanosecond, 1},
		{time.Second, 1e6},
	} {
		if got := New(nil, &Options{Lease: tc.lease}).leaseUS; got != tc.want {
			t.Errorf("Lease %v: %d µs, want %d", tc.lease, got, tc.want)
		}
	}
}
