package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// treeSchema is a hand-written input schema outside the guard's fast
// validator's subset (anyOf), so that the reference validator runs, which
// takes arguments nested up to encoding/json's limit of 10000 levels: a
// tree of any shape under "tree".
const treeSchema = `{"type":"object","properties":{"tree":{"anyOf":[{"type":"array"},{"type":"object"}]}},"additionalProperties":false}`

// treeIn is the Go type of the tool plant's arguments.
type treeIn struct {
	Tree any `json:"tree"`
}

// plantGuard installs a guard on a server with the typed write tool plant
// (schema treeSchema, cost 1, one call an hour per user, audit to sink).
// Its handler counts its runs in ran.
func plantGuard(t *testing.T, sink *memSink, ran *atomic.Int64) *mcp.ClientSession {
	t.Helper()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "plant", Class: policy.Write, Cost: 1}},
		WriteAllowlist: []string{"plant"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "plant", InputSchema: json.RawMessage(treeSchema)}, func(ctx context.Context, req *mcp.CallToolRequest, in treeIn) (*mcp.CallToolResult, any, error) {
		ran.Add(1)
		return textResult("planted"), nil, nil
	})
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Limiter: lim, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	return connectPlain(t, srv, nil)
}

// Arguments nested nearly as deep as the go-sdk's transport takes (its
// decoder refuses a message nested deeper than 1000 levels), with a number
// beyond float64's range at the bottom: the go-sdk's typed-tool wrapper
// refuses them before the handler runs, and the guard works its text out,
// the type of every container on the way down included.
func TestReview17hDeepUnreadableNumberIsInvalidArguments(t *testing.T) {
	sink := &memSink{}
	var ran atomic.Int64
	cs := plantGuard(t, sink, &ran)
	const depth = 990
	tree := strings.Repeat(`{"a":[`, depth/2-1) + "1e400" + strings.Repeat("]}", depth/2-1)
	checkNotRunRefusal(t, cs, "plant", `{"tree":`+tree+`}`, &ran, sink, map[string]any{"tree": []any{1}})
}
