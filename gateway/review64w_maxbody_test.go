package gateway

import (
	"math"
	"strings"
	"testing"
)

// TestReview64wMaxBodyBytesLargest: MaxBodyBytes caps a request body; its
// largest value (math.MaxInt64, "no practical cap") must forward a small
// tools/call, not read every body as empty (g.maxBody+1 overflows).
func TestReview64wMaxBodyBytesLargest(t *testing.T) {
	rg := newRig(t, &Options{MaxBodyBytes: math.MaxInt64})
	got := rg.post(t, viewer, call("1", "get_customer_record", `{"id":"c1"}`))
	if got.status != 200 || !strings.Contains(got.body, `"tool":"get_customer_record"`) {
		t.Errorf("MaxBodyBytes=MaxInt64: a small call answered %d %s; want it forwarded (200)", got.status, got.body)
	}
	if n := len(rg.down.log()); n != 1 {
		t.Errorf("downstream received %d requests, want 1", n)
	}
}
