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
	// The SubscribeHandler heard the URIs the bare server's did, in order,
	// a hidden one only with the guard's suffix (see asAbsent); no
	// acknowledgement of a listen the server refused reached the client.
	var heard, bareHeard []string
	for _, s := range u.subscribers() {
		uri := strings.TrimPrefix(s, "bob ")
		if m := review26cSuffix.FindStringIndex(uri); m != nil {
			uri = uri[:m[0]] + uri[m[1]:]
		} else if uri == uiAdmin || uri == uiTpl || uri == uiLegacy {
			uri = "heard unsuffixed: " + uri
		}
		heard = append(heard, uri)
	}
	for _, s := range b.subscribers() {
		bareHeard = append(bareHeard, strings.TrimPrefix(s, "<nobody> "))
	}
	if diff := cmp.Diff(bareHeard, heard); diff != "" {
		t.Errorf("the SubscribeHandler heard (-bare +guarded):\n%s", diff)
	}
	if slices.Contains(guarded.skipped, "notifications/subscriptions/acknowledged") {
		t.Errorf("bob was sent %v", guarded.skipped)
	}
}
