package confirm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/confirm"
)

// The protocol versions a guard must serve: the default (multi round-trip
// done by the client) and the handshake-era one (the go-sdk server turns the
// input request into elicitation/create and re-invokes the handler).
var versions = []string{"2026-07-28", "2025-11-25"}

// fakeClock is the time parameter of the guard under test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is a confirmation guard wired the way the root package wires it,
// shared by the servers of several authenticated subjects (as replicas
// sharing one signer would be), plus what the tests observe.
type harness struct {
	signer *confirm.Signer
	clock  *fakeClock
	now    func() time.Time // the guard's clock: clock.Now unless replaced

	ran     atomic.Int32 // real tool executions
	rounds  atomic.Int32 // guard invocations
	mu      sync.Mutex
	audit   []string
	ranArgs []string
	issued  []string // states issued, in order
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{signer: s, clock: &fakeClock{now: time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)}}
	h.now = h.clock.Now
	return h
}

func (h *harness) record(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.audit = append(h.audit, fmt.Sprintf(format, args...))
}

func (h *harness) lastState() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.issued) == 0 {
		return ""
	}
	return h.issued[len(h.issued)-1]
}

func (h *harness) auditLog() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.audit...)
}

func refusal(reason string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{}
	res.SetError(errors.New("CONFIRMATION_REQUIRED: " + reason))
	return res
}

func reason(err error) string {
	for _, e := range []error{confirm.ErrMalformed, confirm.ErrUnknownKey, confirm.ErrBadSignature,
		confirm.ErrExpired, confirm.ErrMismatch, confirm.ErrReplayed, confirm.ErrStore} {
		if errors.Is(err, e) {
			return strings.TrimPrefix(e.Error(), "confirm: ")
		}
	}
	return "unknown"
}

// guard is the confirmation step for one authenticated subject.
func (h *harness) guard(subject string, next mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h.rounds.Add(1)
		p := req.Params
		sum, err := confirm.ArgsSHA256(p.Arguments)
		if err != nil {
			return refusal("invalid arguments"), nil
		}
		c := confirm.Claims{Subject: subject, Tool: p.Name, ArgsSHA256: sum}
		if p.RequestState == "" {
			st, err := h.signer.Issue(h.now(), c)
			if err != nil {
				return refusal("cannot issue"), nil
			}
			h.mu.Lock()
			h.issued = append(h.issued, st)
			h.mu.Unlock()
			h.record("%s asked", subject)
			return confirm.Ask(confirm.Describe(p.Name, p.Arguments), st), nil
		}
		if err := h.signer.Verify(ctx, h.now(), p.RequestState, c); err != nil {
			h.record("%s refused: %s", subject, reason(err))
			return refusal(reason(err)), nil
		}
		action, ok := confirm.Answer(p)
		if !ok {
			h.record("%s refused: no answer", subject)
			return refusal("no answer"), nil
		}
		if action != "accept" {
			h.record("%s not run: %s", subject, action)
			return refusal(action), nil
		}
		h.record("%s confirmed", subject)
		return next(ctx, req)
	}
}

func (h *harness) refund(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	h.ran.Add(1)
	h.mu.Lock()
	h.ranArgs = append(h.ranArgs, string(req.Params.Arguments))
	h.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded"}}}, nil
}

// server returns a server whose transport authenticated subject.
func (h *harness) server(subject string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "shop"}, nil)
	s.AddTool(&mcp.Tool{Name: "refund", InputSchema: map[string]any{"type": "object"}}, h.guard(subject, h.refund))
	return s
}

// connect connects a new client session to s on the given protocol version.
func connect(t *testing.T, s *mcp.Server, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// manual returns a session with the automatic multi round-trip disabled, to
// send retries by hand.
func manual(t *testing.T, s *mcp.Server, version string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	if version == "" || version >= "2026-07-28" {
		// The test answers the input requests: its client declares
		// elicitation, which a guard asks only of a client that does.
		opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	}
	return connect(t, s, version, opts)
}

func retry(t *testing.T, cs *mcp.ClientSession, args map[string]any, state, action string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name:           "refund",
		Arguments:      args,
		InputResponses: mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: action}},
		RequestState:   state,
	})
	if err != nil {
		t.Fatalf("manual retry: %v", err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

var order = map[string]any{"customer_id": "CUST-00001", "amount": 12.5}

// connectRecording connects a client that records the methods of requests
// the server sends it.
func connectRecording(t *testing.T, s *mcp.Server, version string, received *[]string, mu *sync.Mutex,
	elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "client"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if _, ok := req.GetParams().(*mcp.ElicitParams); ok {
				mu.Lock()
				*received = append(*received, method)
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	if got := ss.InitializeParams().ProtocolVersion; got != version {
		t.Fatalf("negotiated protocol %q, want %q", got, version)
	}
	return cs
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
