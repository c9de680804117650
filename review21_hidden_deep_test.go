package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A resources/read or prompts/get result nested more than 1000 levels deep
// (in a _meta: the only part of either that nests) closed the caller's
// session: go-sdk v1.8.0's client refuses such a message, and every later
// request on the session failed. Step 11 refuses this for tool results
// (review20); the guard now refuses it for these results too, with a
// JSON-RPC error, and the session goes on. A result nested 500 levels deep
// still passes.
func TestReview21DeepResourceAndPromptRefusedSessionKept(t *testing.T) {
	type shape struct {
		name string
		// get asks for the result through cs.
		get func(cs *mcp.ClientSession) error
	}
	var deep json.RawMessage // set per subtest, read by the handlers
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil })
	for _, r := range []string{"result_meta", "contents_meta"} {
		srv.AddResource(&mcp.Resource{URI: "file:///" + r, Name: r}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			c := &mcp.ResourceContents{URI: req.Params.URI, Text: "x"}
			res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}
			if r == "result_meta" {
				res.Meta = mcp.Meta{"d": deep}
			} else {
				c.Meta = mcp.Meta{"d": deep}
			}
			return res, nil
		})
	}
	srv.AddResource(&mcp.Resource{URI: "file:///nan", Name: "nan"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Meta: mcp.Meta{"d": math.NaN()}, Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
	})
	for _, p := range []string{"result_meta", "text_meta", "embedded_meta", "link_meta"} {
		srv.AddPrompt(&mcp.Prompt{Name: p}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			var c mcp.Content = &mcp.TextContent{Text: "x"}
			res := &mcp.GetPromptResult{}
			switch p {
			case "result_meta":
				res.Meta = mcp.Meta{"d": deep}
			case "text_meta":
				c = &mcp.TextContent{Text: "x", Meta: mcp.Meta{"d": deep}}
			case "embedded_meta":
				c = &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Text: "x", Meta: mcp.Meta{"d": deep}}}
			case "link_meta":
				c = &mcp.ResourceLink{URI: "file:///a", Name: "a", Meta: mcp.Meta{"d": deep}}
			}
			res.Messages = []*mcp.PromptMessage{{Role: "user", Content: c}}
			return res, nil
		})
	}
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "ok", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, g: g, auth: auth}

	var shapes []shape
	for _, r := range []string{"result_meta", "contents_meta"} {
		shapes = append(shapes, shape{"read_" + r, func(cs *mcp.ClientSession) error {
			_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///" + r})
			return err
		}})
	}
	for _, p := range []string{"result_meta", "text_meta", "embedded_meta", "link_meta"} {
		shapes = append(shapes, shape{"prompt_" + p, func(cs *mcp.ClientSession) error {
			_, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: p})
			return err
		}})
	}
	// A result the go-sdk cannot encode got no answer at all: the caller
	// waited for its own deadline.
	t.Run("read_unencodable", func(t *testing.T) {
		h.t = t
		cs := h.connect(bob, clientOpts{})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///nan"})
		if we := wireError(err); we == nil || we.Code != jsonrpc.CodeInternalError {
			t.Errorf("a result with NaN in its _meta: %v, want JSON-RPC error %d", err, jsonrpc.CodeInternalError)
		}
	})
	for _, v := range protocolVersions {
		for _, sh := range shapes {
			for _, depth := range []int{500, 1100} {
				t.Run(fmt.Sprintf("%s/%s/%d", versionName(v), sh.name, depth), func(t *testing.T) {
					deep = review20Deep(depth)
					h.t = t
					cs := h.connect(bob, clientOpts{version: v})
					err := sh.get(cs)
					if depth == 500 {
						if err != nil {
							t.Fatalf("nested %d deep: %v, want the result", depth, err)
						}
					} else {
						we := wireError(err)
						if we == nil || we.Code != jsonrpc.CodeInternalError || !strings.Contains(we.Message, "malformed") {
							t.Errorf("nested %d deep: %v, want JSON-RPC error %d (a malformed result)", depth, err, jsonrpc.CodeInternalError)
						}
					}
					if res, err := call(t, cs, "ok", map[string]any{}); err != nil || res.IsError {
						t.Fatalf("the next call on the session: %v %s", err, mustJSON(res))
					}
				})
			}
		}
	}
}
