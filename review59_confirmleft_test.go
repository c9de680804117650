package mcpguard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview59ClientLeftWhileConfirming: an older client (protocol
// 2025-11-25) that cancels its call while its human is asked to confirm
// the write left a record saying "elicitation failed", as if the client
// could not be asked; it says the client went away now (and the tool was
// not run), as a client's leaving while the tool runs does.
func TestReview59ClientLeftWhileConfirming(t *testing.T) {
	h := newHarness(t, basePolicy(false), nil)
	asked := make(chan struct{})
	cs := h.connect(alice, clientOpts{version: "2025-11-25", elicit: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		close(asked)
		<-ctx.Done() // the human never answers; the call is cancelled
		return nil, ctx.Err()
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{"target": "db"}})
		done <- err
	}()
	<-asked
	cancel()
	<-done
	if err := h.g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	var last audit.Event
	for time.Now().Before(deadline) {
		for _, e := range h.sink.all() {
			if e.Tool == "wipe" && e.Phase == audit.PhaseOutcome {
				last = e
			}
		}
		if last.Tool != "" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if last.Allowed || last.Code != "CONFIRMATION_REQUIRED" || !strings.HasPrefix(last.Detail, "the client went away") {
		t.Errorf("the record of a call cancelled while confirming: %+v, want CONFIRMATION_REQUIRED, the client went away", last)
	}
	if n := h.down.calls.Load(); n != 0 {
		t.Errorf("the write ran %d times", n)
	}
}
