package gateway

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// memSink is an audit sink that keeps every event, safe for concurrent use.
type memSink struct {
	mu  sync.Mutex
	evs []audit.Event
}

func (s *memSink) Write(_ context.Context, e *audit.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, *e)
	return nil
}

// outcomes returns the outcome events of tool.
func (s *memSink) outcomes(tool string) []audit.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []audit.Event
	for _, e := range s.evs {
		if e.Phase == audit.PhaseOutcome && e.Tool == tool {
			out = append(out, e)
		}
	}
	return out
}

// TestClientGoneHoldsInFlightSlot: a client that sends a tools/call and
// hangs up while the downstream runs it must not get its in-flight slot
// back before the downstream has answered: the downstream (a go-sdk server
// guarded by mcpguard runs a started write to completion) is still busy
// with the call, so hanging up and calling again would put any number of
// one user's calls downstream at once under --inflight 1. And the call's
// outcome record is the downstream's answer, not an upstream failure the
// downstream never had.
func TestClientGoneHoldsInFlightSlot(t *testing.T) {
	for _, tc := range []struct{ name, first string }{
		{"single", call(`1`, "slow_write", `{}`)},
		{"batch_member", "[" + call(`1`, "slow_write", `{}`) + "]"},
	} {
		t.Run(tc.name, func(t *testing.T) { clientGoneHoldsSlot(t, tc.first) })
	}
}

// clientGoneHoldsSlot runs TestClientGoneHoldsInFlightSlot with first as
// the body of the call whose client hangs up.
func clientGoneHoldsSlot(t *testing.T, first string) {
	t.Helper()
	entered := make(chan struct{})
	release := make(chan struct{})
	var runs, done atomic.Int64
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "slow_write", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if runs.Add(1) == 1 {
				close(entered)
				<-release // a started write runs to completion, client or not
			}
			done.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil
		})
	down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := New(down.URL, DemoTokens(), &Options{Limiter: lim, Audit: sink, Logger: discardLogger(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the servers close, which wait for the handler
	send := func(ctx context.Context, body string) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer viewer-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 4096)
		for {
			n, rerr := resp.Body.Read(buf)
			sb.Write(buf[:n])
			if rerr != nil {
				break
			}
		}
		return resp.StatusCode, sb.String(), nil
	}

	ctx, hangUp := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() { _, _, err := send(ctx, first); firstDone <- err }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first call never reached the downstream")
	}
	hangUp()
	<-firstDone
	// The gateway notices the hang-up at once; then every call of the same
	// user while the first still runs downstream must be refused.
	for i := 0; i < 6; i++ {
		time.Sleep(50 * time.Millisecond)
		status, got, err := send(context.Background(), call(`2`, "slow_write", `{}`))
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusTooManyRequests || !strings.Contains(got, "CONCURRENCY_LIMIT_EXCEEDED") {
			t.Fatalf("second call while the hung-up first one runs downstream: %d %s; want 429 CONCURRENCY_LIMIT_EXCEEDED (downstream runs: %d)", status, got, runs.Load())
		}
	}
	free()
	deadline := time.Now().Add(10 * time.Second)
	for len(sink.outcomes("slow_write")) < 7 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	evs := sink.outcomes("slow_write")
	var firstOut []audit.Event
	for _, e := range evs {
		if e.Code != "CONCURRENCY_LIMIT_EXCEEDED" {
			firstOut = append(firstOut, e)
		}
	}
	if len(firstOut) != 1 || !firstOut[0].Allowed || firstOut[0].Code != "" || !strings.Contains(firstOut[0].Detail, "went away") {
		t.Errorf("outcome records of the hung-up call: %+v; want one, allowed, without a code, saying the client went away (the downstream ran it: %d done)", firstOut, done.Load())
	}
	// Its slot is free once the downstream has answered.
	if status, got, err := send(context.Background(), call(`2`, "slow_write", `{}`)); err != nil || status != http.StatusOK {
		t.Errorf("a call after the first one's answer: %d %s %v; want 200", status, got, err)
	}
}

// TestOneOutcomePerToolsCall: every tools/call the gateway is sent has
// exactly one outcome record, refused or not, under the request's
// correlation id: one whose caller is not authenticated among them, even
// when its params could not be read (no or a bad tool name), which had
// none.
func TestOneOutcomePerToolsCall(t *testing.T) {
	sink := &memSink{}
	rg := newRig(t, &Options{Audit: sink})
	owned := rg.post(t, admin, call(`1`, "get_customer_record", `{}`), "Mcp-Session-Id", "owned-by-admin")
	if owned.status != http.StatusOK {
		t.Fatalf("admin's first use of a session: %d %s", owned.status, owned.body)
	}
	noName := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}`
	ctlName := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get\u0000x","arguments":{}}}`
	for _, tc := range []struct {
		name, auth, body string
		hdr              []string
		want             []string // the codes of the outcome records, in order
	}{
		{"unauthenticated", "", call(`1`, "get_customer_record", `{}`), nil, []string{"UNAUTHENTICATED"}},
		{"unauthenticated_no_name", "", noName, nil, []string{"UNAUTHENTICATED"}},
		{"unauthenticated_control_name", "Bearer wrong", ctlName, nil, []string{"UNAUTHENTICATED"}},
		{"unauthenticated_batch", "", "[" + call(`1`, "get_customer_record", `{}`) + "," + noName + "]", nil, []string{"UNAUTHENTICATED", "UNAUTHENTICATED"}},
		{"no_name", viewer, noName, nil, []string{"INVALID_ARGUMENTS"}},
		{"forbidden", viewer, call(`1`, "admin_reset_key", `{}`), nil, []string{"FORBIDDEN"}},
		{"forbidden_notification", viewer, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"admin_reset_key"}}`, nil, []string{"FORBIDDEN"}},
		{"other_principals_session", viewer, call(`1`, "get_customer_record", `{}`), []string{"Mcp-Session-Id", "owned-by-admin"}, []string{"FORBIDDEN"}},
		{"allowed", viewer, call(`1`, "get_customer_record", `{}`), nil, []string{""}},
		{"mixed_batch", viewer, "[" + call(`1`, "get_customer_record", `{}`) + "," + call(`2`, "admin_reset_key", `{}`) + "," + noName + "]", nil, []string{"", "FORBIDDEN", "INVALID_ARGUMENTS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink.mu.Lock()
			before := len(sink.evs)
			sink.mu.Unlock()
			got := rg.post(t, tc.auth, tc.body, tc.hdr...)
			// An answer relayed whole may reach the client just before its
			// record is written.
			var evs []audit.Event
			for deadline, settled := time.Now().Add(2*time.Second), false; ; {
				sink.mu.Lock()
				evs = append([]audit.Event(nil), sink.evs[before:]...)
				sink.mu.Unlock()
				if settled || time.Now().After(deadline) {
					break
				}
				if len(evs) >= len(tc.want) {
					settled = true // once more, for a record too many
				}
				time.Sleep(20 * time.Millisecond)
			}
			var codes []string
			cids := map[string]bool{}
			for _, e := range evs {
				if e.Phase == audit.PhaseOutcome {
					codes = append(codes, e.Code)
					cids[e.CorrelationID] = true
				}
			}
			slices.Sort(codes)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(codes, want) || len(cids) > 1 {
				t.Errorf("POST %s: %d %s\noutcome records: codes %q under %d correlation ids; want %q under one", tc.body, got.status, got.body, codes, len(cids), want)
			}
		})
	}
}
