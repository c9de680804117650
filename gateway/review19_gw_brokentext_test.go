package gateway

import (
	"net/http"
	"testing"
)

// TestBrokenTextArgumentsRefused: arguments holding an escaped lone UTF-16
// surrogate, which encoding/json reads as U+FFFD, read otherwise in a
// downstream that keeps such text (JavaScript's JSON.parse, Python's
// json.loads), so the call the gateway judged is not the one the
// downstream would run: refused locally (-32602, 400), as the library's
// pipeline refuses them, and never forwarded. A body with invalid UTF-8 is
// refused whole, as not JSON (-32700). A surrogate pair and U+FFFD are
// text like any other.
func TestBrokenTextArgumentsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		refused    bool
		code       int
		id         string
	}{
		{"lone high surrogate", `{"id":"\ud800"}`, true, -32602, "7"},
		{"lone low surrogate", `{"id":"x\uDC00y"}`, true, -32602, "7"},
		{"high surrogate then not a low one", `{"id":"\ud800\u0041"}`, true, -32602, "7"},
		{"lone surrogate in a key", `{"i\ud800d":"1"}`, true, -32602, "7"},
		{"invalid UTF-8", "{\"id\":\"a\xffb\"}", true, -32700, "null"},
		{"invalid UTF-8 in a key", "{\"i\xc0d\":\"1\"}", true, -32700, "null"},
		{"surrogate pair", `{"id":"\ud83d\ude00"}`, false, 0, ""},
		{"U+FFFD escaped", `{"id":"\ufffd"}`, false, 0, ""},
		{"U+FFFD written out", `{"id":"` + "\uFFFD" + `"}`, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t, nil)
			got := rg.post(t, viewer, call(`7`, "get_customer_record", tc.args))
			forwarded := len(rg.down.log()) != 0
			if !tc.refused {
				if got.status != http.StatusOK || !forwarded {
					t.Fatalf("status %d, forwarded %v, want 200 and forwarded: %s", got.status, forwarded, got.body)
				}
				return
			}
			if forwarded {
				t.Fatalf("a call whose arguments hold broken text reached the downstream")
			}
			if got.status != http.StatusBadRequest {
				t.Errorf("status %d, want 400: %s", got.status, got.body)
			}
			if id, code, _ := rpcErr(t, got.body); code != tc.code || string(id) != tc.id {
				t.Errorf("error code %d, id %s, want %d, %s: %s", code, id, tc.code, tc.id, got.body)
			}
		})
	}
}
