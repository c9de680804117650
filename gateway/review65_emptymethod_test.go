package gateway

import (
	"strings"
	"testing"
)

// TestReview65EmptyMethod: since policy.CheckName refuses the empty name
// (c22687d), a request with "method":"" is refused locally; its message
// said "method has white space at an end or a control or invisible
// character", which it has not.
func TestReview65EmptyMethod(t *testing.T) {
	rg := newRig(t, nil)
	got := rg.post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":""}`)
	if !strings.Contains(got.body, "method must be a non-empty string") {
		t.Errorf(`"method":"": %d %s; want -32600 saying the method is empty`, got.status, got.body)
	}
	if n := len(rg.down.log()); n != 0 {
		t.Errorf("downstream received %d requests, want 0", n)
	}
}
