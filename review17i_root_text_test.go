package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call whose arguments hold invalid UTF-8 or an escaped lone UTF-16
// surrogate passed validation (encoding/json reads both as U+FFFD). On a
// tool that needs a confirmation the caller was then told "arguments are
// not valid JSON" (the JSON is valid); on a tool whose handler asks for
// input, the handler ran, its request state could not be sealed, and the
// caller got INTERNAL: its own bad input reported as a server fault. Both
// are refused at validation now, as INVALID_ARGUMENTS saying what is
// wrong, before the user is asked or the handler runs, on both protocol
// versions, with a strict or a lenient schema.
func TestReview17iBrokenTextRefusedBeforeConfirmAndHandler(t *testing.T) {
	const want = "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"
	for _, v := range protocolVersions {
		for _, lenient := range []bool{false, true} {
			for _, tool := range []string{"askwipe", "asknote"} {
				for _, args := range []string{`{"target":"\ud800"}`, `{"target":"\udc00\ud800"}`, "{\"target\":\"\xff\"}", `{"target":"x","\udfff":1}`} {
					cs, runs, asked := review17iServer(t, v, lenient)
					res, err := call(t, cs, tool, json.RawMessage(args))
					if err != nil {
						t.Fatalf("%s, lenient %v: %s(%q): %v", versionName(v), lenient, tool, args, err)
					}
					code, msg := review17iError(t, res)
					if code != string(mcpguard.CodeInvalidArguments) || msg != want {
						t.Errorf("%s, lenient %v: %s(%q) = %s %q; want INVALID_ARGUMENTS %q", versionName(v), lenient, tool, args, code, msg, want)
					}
					if n, a := runs.Load(), asked.Load(); n != 0 || a != 0 {
						t.Errorf("%s, lenient %v: %s(%q): the handler ran %d times, the user was asked %d times; want neither", versionName(v), lenient, tool, args, n, a)
					}
				}
			}
		}
	}
}

// review17iServer serves "askwipe", a write that needs the guard's
// confirmation, and "asknote", whose handler asks the user for input with
// a multi round-trip; runs counts every handler run, asked every
// elicitation the client answered (accepting).
func review17iServer(t *testing.T, version string, lenient bool) (cs *mcp.ClientSession, runs, asked *atomic.Int64) {
	t.Helper()
	runs, asked = new(atomic.Int64), new(atomic.Int64)
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	h := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runs.Add(1)
		if _, ok := req.Params.InputResponses[mrtrAskKey]; ok {
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
			{Name: "asknote", Class: policy.Write},
			{Name: "askwipe", Class: policy.Write, Confirm: true},
		},
		WriteAllowlist: []string{"asknote", "askwipe"},
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{
		Audit: &memSink{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Confirmer: testSigner(t, nil), Validation: &mcpguard.ValidationOptions{Lenient: lenient},
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
	accept := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: accept})
	cs, err = cl.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs, runs, asked
}

// review17iError returns the code and message of a refusal result ("" for
// a result that is none).
func review17iError(t *testing.T, res *mcp.CallToolResult) (code, msg string) {
	t.Helper()
	if res == nil || !res.IsError {
		return "", ""
	}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return body.Error.Code, body.Error.Message
}
