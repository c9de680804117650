package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ctxerrPassed is a context at the instant its deadline has passed but its
// timer has not yet marked it done: Err is still nil.
type ctxerrPassed struct{ context.Context }

func (ctxerrPassed) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// ctxerrTimeout is what a dial or a read whose deadline came from the
// call's context returns (a *net.OpError's i/o timeout): Temporary.
type ctxerrTimeout struct{}

func (ctxerrTimeout) Error() string   { return "dial tcp: i/o timeout" }
func (ctxerrTimeout) Timeout() bool   { return true }
func (ctxerrTimeout) Temporary() bool { return true }

// TestReview23eNoReadRetryPastDeadline: RetryReads does not retry a read
// once the call's deadline has passed (Options.RetryReads). A handler's
// downstream whose connection deadline is the call's (net.Dialer, from the
// context's Deadline) can fail with a Temporary timeout a moment before the
// context's timer marks it done: the read was retried past its deadline,
// its handler run a second time for nobody, its record saying so.
func TestReview23eNoReadRetryPastDeadline(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "lookup", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{RetryReads: true, Audit: sink, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	h, err := g.Wrap(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n.Add(1)
			return nil, ctxerrTimeout{}
		})
	if err != nil {
		t.Fatal(err)
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "lookup", Arguments: json.RawMessage(`{}`)}}
	if _, err := h(ctxerrPassed{context.Background()}, req); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("handler ran %d times though the call's deadline had passed, want 1", got)
	}
	for _, e := range sink.all() {
		if strings.Contains(e.Detail, "retried") {
			t.Errorf("record %s says %q", e.Phase, e.Detail)
		}
	}
	// A live call is still retried.
	n.Store(0)
	if _, err := h(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("live call: handler ran %d times, want 2 (one retry)", got)
	}
}

// ctxerrLog collects the records of a logger.
type ctxerrLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *ctxerrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *ctxerrLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestReview23eLimiterPassedDeadlineIsClientGone: a limiter store whose
// client times out at the call's deadline (go-redis with
// ContextTimeoutEnabled) fails a moment before the context is marked done;
// the limiter refuses the call as one whose caller gave up (it unwraps to
// context.DeadlineExceeded), but the guard took it for the limiter's own
// failure: an ERROR "limiter failed" line and a record saying the rate
// limiter is unavailable, for a client that had left. It is recorded and
// logged as the client's leaving, as for a context marked done.
func TestReview23eLimiterPassedDeadlineIsClientGone(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "lookup", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	store := limiter.StoreFunc(func(context.Context, time.Time, *limiter.Batch) error {
		return errors.New("i/o timeout")
	})
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 10, Window: time.Hour}},
		&limiter.Options{Store: store, FailOpenReads: true})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	logs := &ctxerrLog{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Limiter: lim, Audit: sink,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "lookup", Arguments: json.RawMessage(`{}`)}}
	res, err := h(ctxerrPassed{context.Background()}, req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Fatalf("a call whose deadline passed while the store failed was let through: %+v", res)
	}
	if s := logs.String(); strings.Contains(s, "limiter failed") || !strings.Contains(s, "before the limiter decided") {
		t.Errorf("log:\n%s\nwant the client's leaving, not the limiter's failure", s)
	}
	evs := sink.all()
	if len(evs) == 0 {
		t.Fatal("no record")
	}
	if e := evs[len(evs)-1]; !strings.Contains(e.Detail, "client went away") {
		t.Errorf("record detail %q, want the client's leaving", e.Detail)
	}
}
