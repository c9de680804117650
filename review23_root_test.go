package mcpguard_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReview23ListenHiddenAfterUnknown: a subscriptions/listen that names
// a URI the server does not have and then the UI resource of a tool its
// caller may not see is answered as by a server without that tool: the
// go-sdk subscribes the URIs in order and answers the first refusal, here
// the unknown one's. Answered for the hidden one, it told the caller that
// the second URI was a hidden tool's UI resource.
func TestReview23ListenHiddenAfterUnknown(t *testing.T) {
	u := newUIServer(0, true, nil)
	h := u.guard(t)
	guarded := h.rawConnect(bob)
	b := newUIServer(0, false, nil)
	bare := rawConnectTo(t, b.srv, nil)
	for _, uris := range [][]string{
		{"ui://admin/nope", uiAdmin},
		{"ui://admin/nope", uiTpl, uiLegacy},
		{uiOpen, "ui://admin/nope", uiAdmin},
		{uiOpen, uiAdmin, "ui://admin/nope"},
		{uiAdmin, "ui://admin/nope"},
	} {
		q, _ := json.Marshal(uris)
		params := `{"notifications":{"resourceSubscriptions":` + string(q) + `}}`
		if got, want := guarded.response("subscriptions/listen", params), bare.response("subscriptions/listen", params); got != want {
			t.Errorf("bob's subscriptions/listen %s:\n got %s\nwant %s", params, got, want)
		}
	}
	// The SubscribeHandler heard the URIs before the hidden one, as the
	// bare server's did, and the hidden ones never; no acknowledgement of
	// the guard's own listen reached the client.
	var heard, bareHeard []string
	for _, s := range u.subscribers() {
		heard = append(heard, strings.TrimPrefix(s, "bob "))
	}
	for _, s := range b.subscribers() {
		if uri := strings.TrimPrefix(s, "<nobody> "); uri != uiAdmin && uri != uiTpl && uri != uiLegacy {
			bareHeard = append(bareHeard, uri)
		}
	}
	if diff := cmp.Diff(bareHeard, heard); diff != "" {
		t.Errorf("the SubscribeHandler heard (-bare +guarded):\n%s", diff)
	}
	if slices.Contains(guarded.skipped, "notifications/subscriptions/acknowledged") {
		t.Errorf("bob was sent %v", guarded.skipped)
	}
}
