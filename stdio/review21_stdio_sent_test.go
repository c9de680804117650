package stdio

import (
	"runtime"
	"strings"
	"testing"
)

// TestReview21AnswerNotCopied: the writer reads every line the go-sdk
// writes, to take the requests it answers out of flight. Since the
// answers of any shape were counted (3b0f8ea), it decoded the whole result
// of each into a json.RawMessage, a copy of it as large as the answer,
// though it needs the result of an answer to initialize alone. A server
// whose calls return large results (a resource of some MiB) allocated each
// once more. The result is now read only for an answer to initialize.
func TestReview21AnswerNotCopied(t *testing.T) {
	const size = 8 << 20
	line := []byte(`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", size) + `"}]}}`)
	least := ^uint64(0)
	for range 3 {
		s := newSession()
		s.pending[idKey{set: true, n: 2}] = true
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s.sent(line)
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
		if n, _ := s.unanswered(); n != 0 {
			t.Fatalf("%d requests in flight after their answer was written, want 0", n)
		}
	}
	if least > size/4 {
		t.Errorf("reading an answer of %d bytes allocated %d bytes, want well under its size", len(line), least)
	}
}

// TestReview21InitializeVersionRead: the version of an answer to
// initialize is still read, alone or in a batch answer, and an answer
// whose protocolVersion is not a string leaves the version unknown.
func TestReview21InitializeVersionRead(t *testing.T) {
	tests := []struct {
		name       string
		answer     string
		negotiated string
		failed     bool
	}{
		{"alone", `{"jsonrpc":"2.0","id":1,"result":{"capabilities":{},"protocolVersion":"2025-03-26","serverInfo":{"name":"s","version":"1"}}}`, "2025-03-26", false},
		{"in_a_batch", `[{"jsonrpc":"2.0","id":7,"result":{"protocolVersion":"2024-11-05"}},{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26"}}]`, "2025-03-26", false},
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":0,"message":"no"}}`, "", true},
		{"version_not_a_string", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":20250326}}`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession()
			one := idKey{set: true, n: 1}
			s.pending[one], s.inits[one] = true, true
			s.sent([]byte(tt.answer))
			if s.negotiated != tt.negotiated || s.initFailed != tt.failed || len(s.inits) != 0 || len(s.pending) != 0 {
				t.Errorf("after %s: negotiated %q, failed %v, %d initialize and %d requests in flight; want %q, %v, 0, 0",
					tt.answer, s.negotiated, s.initFailed, len(s.inits), len(s.pending), tt.negotiated, tt.failed)
			}
		})
	}
}
