package mcpguard_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview45HiddenUnsubscribeSendsNothing: the guard passes a caller's
// resources/unsubscribe from a UI resource it may no longer see to the
// UnsubscribeHandler first with the resource's own URI, its answer
// dropped, so that the subscription ends. What the handler sends the
// client on that way is not sent: a notification is dropped (a progress
// notification naming the resource would tell it from an absent one), and
// a request to the client fails without reaching it. On the run that asks
// as for an absent resource, a message that cannot be read back without
// the guard's suffix fails too, rather than vanish.
func TestReview45HiddenUnsubscribeSendsNothing(t *testing.T) {
	var mu sync.Mutex
	var rootsErr []error  // the handler's roots requests' errors, on the resource's own URI
	var absentErr []error // its unencodable notifications' errors, asked as for an absent one
	h := review26Guard(t, review26Server(true, func(ctx context.Context, req *mcp.UnsubscribeRequest) {
		if req.Params.URI != uiAdmin { // asked as for an absent resource (see asAbsent)
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "t",
				Meta: mcp.Meta{"x": math.Inf(1)}})
			mu.Lock()
			absentErr = append(absentErr, err)
			mu.Unlock()
			return
		}
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "t", Message: req.Params.URI})
		//lint:ignore SA1019 a request to the client, deprecated or not
		_, err := req.Session.ListRoots(ctx, nil)
		mu.Lock()
		rootsErr = append(rootsErr, err)
		mu.Unlock()
	}))
	r := review26DemotedUnsubscribe(t, h)
	// A ping after it: whatever the handler sent came before its answer.
	if _, werr := r.call("ping", `{}`); werr != nil {
		t.Fatalf("ping: %v", werr)
	}
	for _, m := range []string{"notifications/progress", "roots/list"} {
		if slices.Contains(r.skipped, m) {
			t.Errorf("the client was sent %s by the handler of a hidden resource's unsubscribe (got %q)", m, r.skipped)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rootsErr) != 1 || rootsErr[0] == nil {
		t.Errorf("the handler's roots requests returned %v; want one error", rootsErr)
	}
	if len(absentErr) != 1 || absentErr[0] == nil {
		t.Errorf("the handler's unencodable notifications returned %v; want one error", absentErr)
	}
}
