package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r65jRig is a server whose one tool, "transfer", is a confirmed write,
// with a guard installed, and a go-sdk client over in-memory transports
// that accepts every question and records it.
type r65jRig struct {
	cs    *mcp.ClientSession
	mu    sync.Mutex
	asked []string
}

func (r *r65jRig) questions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

// r65jServe installs a guard on a server that add gives the tool
// "transfer", and connects a client on protocol version v.
func r65jServe(t *testing.T, v string, add func(*mcp.Server)) *r65jRig {
	return r65jServeWith(t, v, "transfer", mcpguard.Options{}, add)
}

// r65jServeWith is r65jServe for a confirmed write tool named tool, with
// the guard's Options opts (its Audit, Confirmer and Logger set here).
func r65jServeWith(t *testing.T, v, tool string, opts mcpguard.Options, add func(*mcp.Server)) *r65jRig {
	t.Helper()
	ctx := context.Background()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: tool, Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{tool},
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	opts.Audit, opts.Confirmer, opts.Logger = &memSink{}, testSigner(t, nil), quiet
	g, err := mcpguard.New(pol, auth, &opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	add(srv)
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth.mu.Lock()
	auth.ids[ss] = alice
	auth.mu.Unlock()
	r := &r65jRig{}
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			r.mu.Lock()
			r.asked = append(r.asked, req.Params.Message)
			r.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	r.cs = cs
	return r
}

type r65jAccountsIn struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

type r65jNullableIn struct {
	To *int64 `json:"to"`
}

// TestReview65jRefInteger: wideints.go refuses an integer beyond 2^53
// where the tool's input schema says "integer", since the go-sdk's
// wrapper delivers it rounded; but it looks for "integer" only in a
// property's own schema. A typed tool whose hand-written input schema
// names its account type once, in $defs, and points at it with $ref (or
// gives a nullable *int64 as anyOf integer/null, as schemas generated
// elsewhere do) has 12345678901234567 confirmed by the human and the
// handler run with 12345678901234568, another account. Want: refused
// INVALID_ARGUMENTS at /to, as for {"type":"integer"}, with no question
// asked and the handler not run.
func TestReview65jRefInteger(t *testing.T) {
	const refSchema = `{"type":"object","$defs":{"acct":{"type":"integer"}},` +
		`"properties":{"from":{"$ref":"#/$defs/acct"},"to":{"$ref":"#/$defs/acct"}},` +
		`"required":["from","to"],"additionalProperties":false}`
	const anyOfSchema = `{"type":"object","properties":{"to":{"anyOf":[{"type":"integer"},{"type":"null"}]}},` +
		`"required":["to"],"additionalProperties":false}`
	cases := []struct {
		name, schema, args string
		add                func(*mcp.Server, string, func(int64))
	}{
		{"ref", refSchema, `{"from":1,"to":12345678901234567}`, func(s *mcp.Server, schema string, got func(int64)) {
			mcp.AddTool(s, &mcp.Tool{Name: "transfer", InputSchema: json.RawMessage(schema)},
				func(_ context.Context, _ *mcp.CallToolRequest, in r65jAccountsIn) (*mcp.CallToolResult, any, error) {
					got(in.To)
					return textResult("sent"), nil, nil
				})
		}},
		{"anyOf", anyOfSchema, `{"to":12345678901234567}`, func(s *mcp.Server, schema string, got func(int64)) {
			mcp.AddTool(s, &mcp.Tool{Name: "transfer", InputSchema: json.RawMessage(schema)},
				func(_ context.Context, _ *mcp.CallToolRequest, in r65jNullableIn) (*mcp.CallToolResult, any, error) {
					if in.To != nil {
						got(*in.To)
					}
					return textResult("sent"), nil, nil
				})
		}},
	}
	for _, tc := range cases {
		for _, v := range protocolVersions {
			t.Run(tc.name+"/"+versionName(v), func(t *testing.T) {
				var mu sync.Mutex
				var got []int64
				r := r65jServe(t, v, func(s *mcp.Server) {
					tc.add(s, tc.schema, func(n int64) { mu.Lock(); got = append(got, n); mu.Unlock() })
				})
				res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "transfer",
					Arguments: json.RawMessage(tc.args)})
				mu.Lock()
				d, ok := mcpguard.DenialOf(res, err)
				if !ok || d.Code != mcpguard.CodeInvalidArguments || d.Details["field"] != "/to" {
					t.Errorf("to=12345678901234567: %s, %v; asked %q, handler ran with to=%v; "+
						"want INVALID_ARGUMENTS at /to, nothing asked, the handler not run",
						mustJSON(res), err, r.questions(), got)
				}
				got = nil
				mu.Unlock()
				// One a float64 holds exactly (2^53+2) runs, as sent.
				exact := strings.Replace(tc.args, "12345678901234567", "9007199254740994", 1)
				res, err = r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "transfer",
					Arguments: json.RawMessage(exact)})
				mu.Lock()
				defer mu.Unlock()
				if err != nil || res.IsError || len(got) != 1 || got[0] != 9007199254740994 {
					t.Errorf("%s: %s, %v, handler ran with %v; want it run with to=9007199254740994",
						exact, mustJSON(res), err, got)
				}
			})
		}
	}
}

type r65jRefundIn struct {
	Order  string  `json:"order"`
	Amount float64 `json:"amount"`
}

// TestReview65jDefaultUnconfirmed: the go-sdk's wrapper fills in the
// input schema's defaults (jsonschema-go's ApplyDefaults) after the
// guard has asked the human, who approves the arguments as sent. A
// confirmed refund whose schema gives amount a default of 500 is asked
// about as "Run transfer with order=\"A-1\"" and then runs with amount
// 500, which no one approved; nothing in the package docs says defaults
// are not shown. Want: the question names amount=500, or the call is
// refused before the handler runs.
func TestReview65jDefaultUnconfirmed(t *testing.T) {
	const schema = `{"type":"object","properties":{"order":{"type":"string"},` +
		`"amount":{"type":"number","default":500}},"required":["order"],"additionalProperties":false}`
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			var mu sync.Mutex
			var got []float64
			r := r65jServe(t, v, func(s *mcp.Server) {
				mcp.AddTool(s, &mcp.Tool{Name: "transfer", InputSchema: json.RawMessage(schema)},
					func(_ context.Context, _ *mcp.CallToolRequest, in r65jRefundIn) (*mcp.CallToolResult, any, error) {
						mu.Lock()
						got = append(got, in.Amount)
						mu.Unlock()
						return textResult("refunded"), nil, nil
					})
			})
			res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "transfer",
				Arguments: json.RawMessage(`{"order":"A-1"}`)})
			mu.Lock()
			defer mu.Unlock()
			asked := r.questions()
			t.Logf("asked %q", asked)
			if len(got) > 0 && (len(asked) != 1 || !strings.Contains(asked[0], "amount=500")) {
				t.Errorf("the human was asked %q and the handler ran with amount %v (%s, %v); "+
					"want the question to name amount=500, or the call refused", asked, got, mustJSON(res), err)
			}
		})
	}
}
