package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mrtrAskKey is the handler's own input request key (not the guard's).
const mrtrAskKey = "handler.ticket"

// mrtrServer is a server with tools whose handlers themselves use the
// multi round-trip: on the first round they ask the user for a ticket
// number with an elicitation, and finish once the answer arrives. "asknote"
// is a plain write costing 1, "askwipe" a write that also needs the guard's
// confirmation. runs counts completed (second-round) handler runs, which
// must see the handler's own request state. The client answers every
// elicitation with "accept"; without answer, it does not retry input
// requests by itself.
func mrtrServer(t *testing.T, opts mcpguard.Options, version string, answer bool) (*mcp.ClientSession, *atomic.Int64) {
	t.Helper()
	runs := new(atomic.Int64)
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	h := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses[mrtrAskKey].(*mcp.ElicitResult); ok && r.Action == "accept" {
			if req.Params.RequestState != "handler-own-state" {
				return nil, fmt.Errorf("the handler got request state %q, not its own", req.Params.RequestState)
			}
			runs.Add(1)
			return textResult("done"), nil
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{mrtrAskKey: &mcp.ElicitParams{
				Mode: "form", Message: "ticket number?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			}},
			RequestState: "handler-own-state",
		}, nil
	}
	schema := json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`)
	srv.AddTool(&mcp.Tool{Name: "asknote", InputSchema: schema}, h)
	srv.AddTool(&mcp.Tool{Name: "askwipe", InputSchema: schema}, h)
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "asknote", Class: policy.Write, Cost: 1},
			{Name: "askwipe", Class: policy.Write, Confirm: true},
		},
		WriteAllowlist: []string{"asknote", "askwipe"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Audit == nil {
		opts.Audit = &memSink{}
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if opts.Confirmer == nil {
		opts.Confirmer = testSigner(t, nil)
	}
	accept := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	copts := &mcp.ClientOptions{ElicitationHandler: accept}
	if !answer {
		copts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	return connectInstalled(t, srv, pol, &opts, copts, version), runs
}

// connectInstalled installs a guard of pol and opts on srv, whose sessions
// all authenticate as bob, and connects an in-memory client with copts (on
// protocol version, when not ""); both end with the test.
func connectInstalled(t *testing.T, srv *mcp.Server, pol *policy.Policy, opts *mcpguard.Options, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth.mu.Lock()
	auth.ids[ss] = bob
	auth.mu.Unlock()
	var csopts *mcp.ClientSessionOptions
	if version != "" {
		csopts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, copts).Connect(context.Background(), ct, csopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// TestHandlerMultiRoundTripCountsOnce checks DESIGN.md's "the MRTR retry
// of one logical call counts once" for a handler that asks the user for
// input itself: under a rate limit of one call and a spend limit of one
// unit, its two rounds pass, on both protocol versions (on 2025-11-25 the
// go-sdk runs the rounds inside the guard; on 2026-07-28 the client's retry
// comes back through it with the guard's sealed state).
func TestHandlerMultiRoundTripCountsOnce(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			lim, err := limiter.New([]limiter.Limit{
				{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour},
				{Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: time.Hour},
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs, runs := mrtrServer(t, mcpguard.Options{Limiter: lim}, v, true)
			res, err := call(t, cs, "asknote", map[string]any{"target": "db-1"})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || runs.Load() != 1 {
				t.Fatalf("one logical call within a 1-call budget: code %q, handler completed %d times, want success once: %s",
					errorCode(t, res), runs.Load(), mustJSON(res))
			}
			// The budget is spent: the next logical call is refused.
			res, err = call(t, cs, "asknote", map[string]any{"target": "db-2"})
			if err != nil || !res.IsError || runs.Load() != 1 {
				t.Errorf("a second logical call: %v %s, handler completed %d times; want a refusal", err, mustJSON(res), runs.Load())
			}
		})
	}
}

// TestConfirmedToolHandlerMultiRoundTrip checks a tool that needs the
// guard's confirmation and whose handler then asks the user for input
// itself: the third round carries the handler's state, sealed as
// confirmed, and is neither taken for a confirmation nor asked again.
func TestConfirmedToolHandlerMultiRoundTrip(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			cs, runs := mrtrServer(t, mcpguard.Options{}, v, true)
			res, err := call(t, cs, "askwipe", map[string]any{"target": "db-1"})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || runs.Load() != 1 {
				t.Errorf("confirmed call whose handler asks for input: code %q, handler completed %d times, want success once: %s",
					errorCode(t, res), runs.Load(), mustJSON(res))
			}
		})
	}
}

// TestSealedStateOneTimeAndBound drives the retry by hand: the sealed state
// works once, for the same arguments, and a forged one (the flag of a
// confirmed call, a changed handler state) is refused before the handler
// runs.
func TestSealedStateOneTimeAndBound(t *testing.T) {
	cs, runs := mrtrServer(t, mcpguard.Options{}, "", false)
	first := func() string {
		t.Helper()
		res, err := call(t, cs, "asknote", map[string]any{"target": "db-1"})
		if err != nil || !res.NeedsInput() || !strings.HasPrefix(res.RequestState, "mcpguard.mrtr1-~") {
			t.Fatalf("first round: %v %s", err, mustJSON(res))
		}
		return res.RequestState
	}
	retry := func(target, state string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: "asknote", Arguments: map[string]any{"target": target}, RequestState: state,
			InputResponses: mcp.InputResponseMap{mrtrAskKey: &mcp.ElicitResult{Action: "accept"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	st := first()
	for name, forged := range map[string]string{
		"other arguments":     "",
		"confirmed flag":      strings.Replace(st, "mcpguard.mrtr1-~", "mcpguard.mrtr1c~", 1),
		"other handler state": st + "x",
		"malformed":           "mcpguard.mrtr1-~nonsense",
	} {
		target, state := "db-1", forged
		if name == "other arguments" {
			target, state = "db-2", st
		}
		res := retry(target, state)
		if got := errorCode(t, res); got != "INVALID_ARGUMENTS" || runs.Load() != 0 {
			t.Errorf("%s: code %q, handler completed %d times; want INVALID_ARGUMENTS and no run", name, got, runs.Load())
		}
	}
	st = first() // the refusals above used up nothing of a new state
	if res := retry("db-1", st); res.IsError || runs.Load() != 1 {
		t.Fatalf("valid retry: %s, handler completed %d times", mustJSON(res), runs.Load())
	}
	if res := retry("db-1", st); errorCode(t, res) != "INVALID_ARGUMENTS" || runs.Load() != 1 {
		t.Errorf("replayed retry: %s, handler completed %d times; want INVALID_ARGUMENTS", mustJSON(res), runs.Load())
	}
}
