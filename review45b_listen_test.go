package mcpguard_test

import (
	"strings"
	"sync/atomic"
	"testing"
)

// TestReview45bListenWhileToolsListFails: the guard lists the server's
// tools for a subscriptions/listen only when it names a resource
// subscription (on a server that takes them) or listens for
// resources/list_changed: only then may it name a UI resource its caller
// may not see. While tools/list fails below the guard, such a listen fails
// with the listing's error (fail closed), whether it names a hidden UI
// resource, a plain one, or none; a listen for prompts/list_changed alone
// lists no tools and is acknowledged.
func TestReview45bListenWhileToolsListFails(t *testing.T) {
	var failing atomic.Bool
	srv := review26Server(true, nil)
	review43FailingToolsList(srv, &failing, nil)
	h := review26Guard(t, srv)
	r := review26Connect(t, h, bob, false)
	failing.Store(true)
	for _, notes := range []string{
		`{"resourceSubscriptions":[` + review26Q(uiAdmin) + `]}`,
		`{"resourceSubscriptions":[` + review26Q(plainURI) + `]}`,
		`{"resourcesListChanged":true}`,
	} {
		what := "bob's subscriptions/listen " + notes + " while tools/list fails"
		resp := r.response("subscriptions/listen", `{"notifications":`+notes+`}`)
		if _, msg := review43aError(t, what, resp); !strings.Contains(msg, "tools/list is down") {
			t.Errorf("%s: message %q, want the listing's error", what, msg)
		}
	}
	r.listenFor(`{"promptsListChanged":true}`)
}
