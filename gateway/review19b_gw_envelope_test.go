package gateway

import (
	"net/http"
	"testing"
)

// TestReview19bSurrogateEdges: what the gateway reads for an escaped UTF-16
// surrogate in a tools/call, at the edges of the escape grammar. A high
// surrogate is half of a pair only when an escaped low one follows at
// once: not after an escaped backslash ("\\ude00" is text), nor after
// anything else. An escaped backslash before "ud800" makes it text. A
// surrogate in a member name counts at any depth, and in an array. The
// check is of params.arguments only: the gateway judges nothing else of a
// call's params but its name (whose U+FFFD reading is refused as a
// character it cannot check), so a surrogate in _meta, or in a member it
// does not read, is forwarded as sent: what the downstream reads there
// changes no decision of the gateway's, as in the library's pipeline.
func TestReview19bSurrogateEdges(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		code         int // 0: not refused
	}{
		{"high_then_escaped_backslash_low", `{"name":"t","arguments":{"a":"\ud83d\\ude00"}}`, CodeInvalidParams},
		{"high_then_text_low", `{"name":"t","arguments":{"a":"\ud83dude00"}}`, CodeInvalidParams},
		{"high_at_the_end", `{"name":"t","arguments":{"a":"x\ud83d"}}`, CodeInvalidParams},
		{"pair_upper_case_hex", `{"name":"t","arguments":{"a":"\uD83D\uDE00"}}`, 0},
		{"escaped_backslash_then_text", `{"name":"t","arguments":{"a":"\\ud800"}}`, 0},
		{"two_escaped_backslashes_then_text", `{"name":"t","arguments":{"a":"\\\\ud800"}}`, 0},
		{"escaped_backslash_then_surrogate", `{"name":"t","arguments":{"a":"\\\ud800"}}`, CodeInvalidParams},
		{"nested_member_name", `{"name":"t","arguments":{"a":{"b":[{"c\udfff":1}]}}}`, CodeInvalidParams},
		{"in_an_array", `{"name":"t","arguments":{"a":["ok","\udc00"]}}`, CodeInvalidParams},
		{"in_name", `{"name":"t\ud800","arguments":{}}`, CodeInvalidParams},
		{"in_meta", `{"name":"t","arguments":{},"_meta":{"progressToken":"\ud800"}}`, 0},
		{"in_an_unread_member", `{"name":"t","arguments":{},"x\ud800":"\udc00"}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, _, perr := parseBody([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tc.params + `}`))
			if perr != nil {
				t.Fatalf("parseBody: %s", perr.message)
			}
			m := msgs[0]
			code := 0
			if m.invalid != nil {
				code = m.invalid.code
			}
			if code != tc.code {
				msg := ""
				if m.invalid != nil {
					msg = m.invalid.message
				}
				t.Errorf("refused with %d (%q), want %d", code, msg, tc.code)
			}
		})
	}
}

// TestReview19bSurrogateInMetaForwarded: a tools/call whose _meta holds an
// escaped lone surrogate is judged on its name and arguments and
// forwarded byte for byte, as the decision of TestReview19bSurrogateEdges
// says; the same in its arguments is refused and never forwarded.
func TestReview19bSurrogateInMetaForwarded(t *testing.T) {
	rg := newRig(t, nil)
	meta := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"id":"1"},"_meta":{"progressToken":"\ud800"}}}`
	if got := rg.post(t, viewer, meta); got.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", got.status, got.body)
	}
	if b := rg.down.bodies(); len(b) != 1 || b[0] != meta {
		t.Fatalf("the downstream received %q, want the call as sent", b)
	}
	args := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"id":"\ud800"}}}`
	if got := rg.post(t, viewer, args); got.status != http.StatusBadRequest {
		t.Errorf("status %d, want 400: %s", got.status, got.body)
	}
	if n := len(rg.down.bodies()); n != 1 {
		t.Errorf("%d calls reached the downstream, want 1 (the one with a surrogate in its arguments was forwarded)", n)
	}
}
