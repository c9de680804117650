package gateway

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestReview25bFoldsToKnownLong: a key padded with '_' and '-' beyond any
// buffer, or spelled with letters that fold onto ASCII ones in three bytes
// (K, U+212A), still folds onto the longest known name; a key one letter
// longer does not.
func TestReview25bFoldsToKnownLong(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{strings.Repeat("_", 200) + "instructions" + strings.Repeat("-", 200), true},
		{"i_n_s_t_r_u_c_t_i_o_n_s", true},
		{"INSTRUCTIONS", true},
		{"in\u017ftructions", true}, // ſ
		{"instructions\x00x", true}, // cut at the NUL
		{"instructionss", false},
		{"\u212aeys", false},
	} {
		if got := foldsToKnown([]byte(tc.key), listingKeys[:]); got != tc.want {
			t.Errorf("foldsToKnown(%.40q, listingKeys) = %v, want %v", tc.key, got, tc.want)
		}
	}
	// Three-byte letters throughout: "\u212a" folds onto k.
	if !foldsToKnown([]byte("to\u212aens"), []string{"tokens"}) {
		t.Error("to\u212aens does not fold onto tokens")
	}
}

// TestReview25bPinsKeysDelimiters: a listing whose result, tools or a
// tool's name is under a key that equals it once '_' and '-' are dropped
// ("re_sult", "to-ols", "na_me") is not relayed as it is: encoding/json/v2's
// case-insensitive matching reads such a key as the name, and a client
// decoding with it would read a definition the gateway never checked.
func TestReview25bPinsKeysDelimiters(t *testing.T) {
	for _, tc := range []struct{ name, answer string }{
		{"result", `{"jsonrpc":"2.0","id":1,"re_sult":{"tools":[` + poisonedTool + `]}}`},
		{"tools", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"to-ols":[` + poisonedTool + `]}}`},
		{"name", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"brand_new","na_me":"get_customer_record","description":"` + poisoned + `"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lists atomic.Int64
			down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if lists.Add(1) == 1 {
					io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":[`+goodTool+`]}}`)
					return
				}
				io.WriteString(w, tc.answer)
			}))
			g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			rg := &rig{url: newServer(t, g).URL}
			list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
			rg.post(t, admin, list)
			if r := rg.post(t, admin, list); strings.Contains(r.body, poisoned) {
				t.Errorf("the unchecked definition reached the client: %d %s", r.status, r.body)
			}
		})
	}
}
