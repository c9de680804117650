package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkAsker is a confirmed write tool whose handler asks the user a question
// of its own the way the go-sdk documents it (Example_mrtr): no input
// responses means the first round, which asks; otherwise it reads its
// answer. It records what each of its first rounds was handed.
type sdkAsker struct {
	done atomic.Int64
	mu   sync.Mutex
	seen []string // per handler round: the request state and response keys it was given
}

const sdkAskKey = "reason"

func (a *sdkAsker) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	keys := ""
	for k := range req.Params.InputResponses {
		keys += k + ";"
	}
	a.mu.Lock()
	a.seen = append(a.seen, "state="+req.Params.RequestState+" responses="+keys)
	a.mu.Unlock()
	if len(req.Params.InputResponses) == 0 {
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{sdkAskKey: &mcp.ElicitParams{
				Mode: "form", Message: "why?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			}},
			RequestState: "asker-own",
		}, nil
	}
	r, ok := req.Params.InputResponses[sdkAskKey].(*mcp.ElicitResult)
	if !ok || req.Params.RequestState != "asker-own" || r.Action != "accept" {
		return textResult("refused: not my answer"), nil
	}
	a.done.Add(1)
	return textResult("done"), nil
}

func sdkAskerServer(t *testing.T, version string, co clientOpts) (*mcp.ClientSession, *sdkAsker) {
	t.Helper()
	a := &sdkAsker{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "purge", InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`)}, a.handle)
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "purge", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"purge"},
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{
		Audit: &memSink{}, Confirmer: testSigner(t, nil),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
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
	copts := &mcp.ClientOptions{ElicitationHandler: co.elicit}
	if co.noMRTR {
		copts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
		if version == "" || version >= "2026-07-28" {
			copts.Capabilities = elicitCaps()
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, copts).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs, a
}

// TestConfirmedHandlerGetsAFirstRound: once the confirmation passes, the
// handler runs its first round as if the guard were not there: without the
// guard's confirmation state as its RequestState, and without the
// confirmation's answer (or any other input response the client added, to
// questions nobody asked) in its InputResponses. A handler written the way
// the go-sdk documents the multi round-trip otherwise takes the
// confirmation round for the answer to its own question: with an honest
// client the logical call fails, and a client can slip in answers the
// handler never asked for.
func TestConfirmedHandlerGetsAFirstRound(t *testing.T) {
	accept := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	for _, v := range protocolVersions {
		t.Run("sdk_client/"+versionName(v), func(t *testing.T) {
			cs, a := sdkAskerServer(t, v, clientOpts{elicit: accept})
			res, err := call(t, cs, "purge", map[string]any{"target": "db-1"})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || a.done.Load() != 1 {
				t.Errorf("confirmed call whose handler asks as the go-sdk documents: %s, handler finished %d times, saw %q; want it to finish once",
					mustJSON(res), a.done.Load(), a.seen)
			}
		})
	}
	t.Run("unasked_responses/default", func(t *testing.T) {
		cs, a := sdkAskerServer(t, "", clientOpts{noMRTR: true})
		args := json.RawMessage(`{"target":"db-1"}`)
		ask, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "purge", Arguments: args})
		if err != nil || !ask.NeedsInput() {
			t.Fatalf("first round: %v %s", err, mustJSON(ask))
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: "purge", Arguments: args, RequestState: ask.RequestState,
			InputResponses: mcp.InputResponseMap{
				confirm.InputKey: &mcp.ElicitResult{Action: "accept"},
				sdkAskKey:        &mcp.ElicitResult{Action: "accept"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if a.done.Load() != 0 || !res.NeedsInput() {
			t.Errorf("confirmation round carrying an answer nobody asked for: %s, handler finished %d times; want the handler to ask its own question", mustJSON(res), a.done.Load())
		}
		if want := []string{"state= responses="}; len(a.seen) != 1 || a.seen[0] != want[0] {
			t.Errorf("the handler's first round was handed %q, want %q", a.seen, want)
		}
	})
	t.Run("unasked_responses/2025-11-25", func(t *testing.T) {
		cs, a := sdkAskerServer(t, "2025-11-25", clientOpts{elicit: accept, noMRTR: true})
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: "purge", Arguments: json.RawMessage(`{"target":"db-1"}`),
			InputResponses: mcp.InputResponseMap{sdkAskKey: &mcp.ElicitResult{Action: "accept"}},
		})
		if err != nil {
			t.Log(err)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.seen) == 0 || a.seen[0] != "state= responses=" {
			t.Errorf("the handler's first round was handed %q, want no state and no responses", a.seen)
		}
	})
}
