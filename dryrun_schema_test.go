package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type orderIn struct {
	Item string `json:"item"`
}

type orderOut struct {
	OrderID string `json:"order_id"`
	Status  string `json:"status"`
}

// TestDryRunResultFitsOrIsAnError checks that no dry run hands a client a
// successful result its output schema refuses (clients that follow the
// MCP specification check structured content against it and fail): a
// typed write tool (whose output schema the go-sdk derives from its Out
// type, with required fields) that is not DryRunAware gets the simulated
// result as a tool error; one whose schema admits the simulated result
// gets it as a success; a DryRunAware one answers in its own shape.
func TestDryRunResultFitsOrIsAnError(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	var ran int
	order := func(ctx context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		if dryrun.FromContext(ctx) {
			return nil, orderOut{OrderID: dryrun.NewID(), Status: "dry_run"}, nil
		}
		ran++
		return nil, orderOut{OrderID: "O-1", Status: "placed"}, nil
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "order"}, order)
	mcp.AddTool(srv, &mcp.Tool{Name: "order_aware"}, order)
	srv.AddTool(&mcp.Tool{Name: "loose", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{StructuredContent: map[string]any{}}, nil
		})
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "order", Class: policy.Write}, {Name: "order_aware", Class: policy.Write}, {Name: "loose", Class: policy.Write},
		},
		WriteAllowlist: []string{"order", "order_aware", "loose"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{
		Audit: sink, DryRun: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tools: map[string]mcpguard.ToolOptions{"order_aware": {DryRunAware: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	schemas := map[string]any{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		schemas[tool.Name] = tool.OutputSchema
	}

	for _, tc := range []struct {
		tool    string
		isError bool
		status  string // the structured content's status, for a success in the tool's shape
	}{
		{"order", true, ""},
		{"order_aware", false, "dry_run"},
		{"loose", false, ""},
	} {
		res, err := call(t, cs, tc.tool, map[string]any{"item": "book"})
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		if res.IsError != tc.isError {
			t.Errorf("%s: isError %v, want %v (%s)", tc.tool, res.IsError, tc.isError, mustJSON(res))
		}
		// The record says why a dry run was answered as a tool error (it
		// said nothing before the 58th session: as a success's).
		evs := sink.all()
		if last := evs[len(evs)-1]; !last.Allowed || strings.Contains(last.Detail, "output schema") != tc.isError {
			t.Errorf("%s: record allowed %v, detail %q; want allowed, the output schema named only for a tool error", tc.tool, last.Allowed, last.Detail)
		}
		if !res.IsError {
			// What a checking client does with a successful result.
			schema, _ := json.Marshal(schemas[tc.tool])
			v, err := mcpguard.NewValidator(json.RawMessage(schema), &mcpguard.ValidationOptions{Lenient: true})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(res.StructuredContent)
			if _, err := v.Validate(raw); err != nil {
				t.Errorf("%s: successful dry-run result %s does not fit the output schema %s: %v", tc.tool, raw, schema, err)
			}
		}
		var sc map[string]any
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &sc); err != nil {
			t.Fatalf("%s: structured content %s: %v", tc.tool, raw, err)
		}
		if tc.status != "" {
			if sc["status"] != tc.status {
				t.Errorf("%s: status %v, want %q", tc.tool, sc["status"], tc.status)
			}
		} else if sc["dry_run"] != true {
			t.Errorf("%s: %s, want the simulated result", tc.tool, raw)
		}
	}
	if ran != 0 {
		t.Errorf("a handler ran for real %d times in dry-run", ran)
	}
}
