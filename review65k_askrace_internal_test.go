package mcpguard

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview65kAskBoundedEndsQuestion: a write's caller cancels while its
// handler asks the client (an elicitation through askBounded, the sending
// middleware of Install and AddTool). askBounded stops waiting, the
// handler returns, the guard answers the call (detachedCtx.answered); the
// request to the client must end too, so that the go-sdk tells the client
// (notifications/cancelled) and its question is withdrawn. It was sent
// with the call's context, ended only by askClient's own withCallers,
// whose AfterFunc does nothing once the call is answered: when askBounded's
// AfterFunc ran first, the request was never ended, and the client's human
// went on looking at a question no one waited for (the go-sdk's outgoing
// call kept for the session's life). TestReview30NestedCancelEndsInnerQuestion
// failed so at times (its install cases too).
func TestReview65kAskBoundedEndsQuestion(t *testing.T) {
	g := &Guard{}
	for i := range 200 {
		caller, cancel := context.WithCancel(context.Background())
		d := &detachedCtx{Context: context.WithoutCancel(caller), caller: caller}
		started, ended := make(chan struct{}), make(chan struct{})
		next := func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
			close(started)
			<-ctx.Done()
			close(ended)
			return nil, ctx.Err()
		}
		go func() {
			<-started
			cancel()
		}()
		if _, err := g.askBounded(d, "elicitation/create", nil, next); err == nil {
			t.Fatal("askBounded: no error after the caller cancelled")
		}
		d.answered.Store(true) // the handler returned; the guard answers the call
		select {
		case <-ended:
		case <-time.After(time.Second):
			t.Fatalf("round %d: the request to the client was not ended 1 s after its caller cancelled "+
				"(the call answered meanwhile)", i)
		}
	}
}
