package confirm_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview17gGuardRefusesBeforeAsking: ArgsSHA256 refuses arguments with
// two names that differ only in letter case (seventeenth session); a guard
// that needs a confirmation for a tool must refuse such arguments itself,
// with a reason the model can act on, before the human is asked and before
// the tool runs: in lenient validation and under an open schema too, where
// nothing else refuses the second name. Otherwise the call would end in a
// confirmation that can never be made.
func TestReview17gGuardRefusesBeforeAsking(t *testing.T) {
	for sname, schema := range map[string]string{
		"open":          `{"type":"object"}`,
		"open_declared": `{"type":"object","properties":{"target":{"type":"string"}},"additionalProperties":true}`,
	} {
		for aname, args := range map[string]string{
			"top":         `{"target":"db-1","Target":"db-2"}`,
			"nested":      `{"target":"db-1","opts":{"force":false,"FORCE":true}}`,
			"long_s_item": `{"target":"db-1","list":[{"s":1,"\u017f":2}]}`,
		} {
			t.Run(sname+"/"+aname, func(t *testing.T) {
				if _, err := confirm.ArgsSHA256(json.RawMessage(args)); err == nil {
					t.Fatalf("ArgsSHA256(%s) accepted: a bad case", args)
				}
				var ran, asked atomic.Int32
				srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
				srv.AddTool(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(schema)},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						ran.Add(1)
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil
					})
				pol, err := policy.New(policy.Config{
					Tools:          []policy.ToolRule{{Name: "wipe", Class: policy.Write, Confirm: true}},
					WriteAllowlist: []string{"wipe"},
				})
				if err != nil {
					t.Fatal(err)
				}
				signer, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
					return &mcpguard.Identity{Principal: &policy.Principal{Subject: "bob"}}, nil
				})
				g, err := mcpguard.New(pol, authn, &mcpguard.Options{
					Confirmer:  signer,
					Validation: &mcpguard.ValidationOptions{Lenient: true},
					Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := g.Install(srv); err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				ct, st := mcp.NewInMemoryTransports()
				ss, err := srv.Connect(ctx, st, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer ss.Close()
				c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked.Add(1)
						return &mcp.ElicitResult{Action: "accept"}, nil
					},
				})
				cs, err := c.Connect(ctx, ct, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wipe", Arguments: json.RawMessage(args)})
				if err != nil {
					t.Fatalf("CallTool(%s): %v", args, err)
				}
				b, _ := json.Marshal(res)
				if !res.IsError || !strings.Contains(string(b), "INVALID_ARGUMENTS") || !strings.Contains(string(b), "appears twice") {
					t.Errorf("CallTool(%s) = %s, want INVALID_ARGUMENTS naming the repeated argument", args, b)
				}
				if asked.Load() != 0 || ran.Load() != 0 {
					t.Errorf("CallTool(%s): user asked %d times, tool ran %d times; want neither", args, asked.Load(), ran.Load())
				}
			})
		}
	}
}
