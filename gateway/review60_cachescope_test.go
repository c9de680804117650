package gateway

import (
	"encoding/json"
	"testing"
)

// TestReview60FilteredListPrivate: a tools/list filtered for its caller
// differs from caller to caller, so it must not be "public" (protocol
// 2026-07-28: any client or intermediary may cache and serve it). A
// downstream that sends cacheScope has it made "private"; one that sends
// none (a server on an older protocol, or one of another SDK) meant public
// by its absence, and the gateway relayed the viewer's list so. Unfiltered
// lists are relayed as they came.
func TestReview60FilteredListPrivate(t *testing.T) {
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, filter := range []bool{true, false} {
		rg := newRig(t, &Options{FilterToolsList: filter})
		for _, tok := range []string{viewer, admin} {
			got := rg.post(t, tok, list)
			var msg struct {
				Result map[string]json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(got.body), &msg); err != nil {
				t.Fatalf("%s: %v", got.body, err)
			}
			scope, ok := msg.Result["cacheScope"]
			switch {
			case filter && string(scope) != `"private"`:
				t.Errorf("filtered list for %s: cacheScope %s, want \"private\": %s", tok, scope, got.body)
			case !filter && ok:
				t.Errorf("unfiltered list given a cacheScope: %s", got.body)
			}
		}
	}
}
