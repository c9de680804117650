package gateway

import (
	"testing"
	"time"
)

// TestReview65NegativeMeansDefault pins what the Options docs now say: a
// negative Timeout or MaxBodyBytes means the default, as zero does (30 s,
// 4 MiB), not "no bound".
func TestReview65NegativeMeansDefault(t *testing.T) {
	for _, v := range []int64{0, -1, -1 << 62} {
		g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Timeout: time.Duration(v), MaxBodyBytes: v})
		if err != nil {
			t.Fatal(err)
		}
		if g.timeout != 30*time.Second || g.maxBody != 4<<20 {
			t.Errorf("Timeout and MaxBodyBytes %d: %v and %d, want 30s and 4 MiB", v, g.timeout, g.maxBody)
		}
	}
}
