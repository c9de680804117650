package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bin is the refund binary, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "refund-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "refund")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the refund binary: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// versions are the protocol versions every stdio test runs on: the
// client's default (2026-07-28) and the previous one.
var versions = []struct{ name, version string }{
	{"default_protocol", ""},
	{"protocol_2025_11_25", "2025-11-25"},
}

// syncBuffer collects a child's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// command returns the binary with args and an environment free of the
// caller's REFUND_MCP_* variables plus env.
func command(args []string, env ...string) (*exec.Cmd, *syncBuffer) {
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REFUND_MCP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	return cmd, &stderr
}

// connect starts the binary over stdio and connects a client to it.
func connect(t *testing.T, version string, args []string, env ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	cmd, stderr := command(args, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "refund-test", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Connect: %v; stderr:\n%s", err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

const alice = "REFUND_MCP_TOKEN=demo-token-alice"

// call calls tool with args and returns the structured result as a map, or
// the JSON-RPC error.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) (map[string]any, *jsonrpc.Error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			t.Fatalf("CallTool(%s, %v): error %v is not a JSON-RPC error", tool, args, err)
		}
		return nil, we
	}
	if res.IsError {
		t.Fatalf("CallTool(%s, %v): tool error result %+v; want a result or a JSON-RPC error", tool, args, res.Content)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("CallTool(%s): structured content %s: %v", tool, b, err)
	}
	var text map[string]any
	if len(res.Content) != 1 || json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &text) != nil {
		t.Errorf("CallTool(%s): want one text content holding the JSON result, got %+v", tool, res.Content)
	} else if diff := cmp.Diff(m, text); diff != "" {
		t.Errorf("CallTool(%s): text and structured content differ (-structured +text):\n%s", tool, diff)
	}
	return m, nil
}

// errData decodes the data of a guard's JSON-RPC error.
func errData(t *testing.T, we *jsonrpc.Error) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(we.Data, &d); err != nil {
		t.Fatalf("error data %s: %v", we.Data, err)
	}
	return d
}

func toMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestListTools(t *testing.T) {
	want := map[string]map[string]any{}
	for _, tool := range customerTools() {
		want[tool.Name] = toMap(t, tool.InputSchema)
	}
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			cs, _ := connect(t, v.version, nil, alice)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]map[string]any{}
			readOnly := map[string]bool{}
			for _, tool := range res.Tools {
				got[tool.Name] = toMap(t, tool.InputSchema)
				readOnly[tool.Name] = tool.Annotations != nil && tool.Annotations.ReadOnlyHint
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tools and input schemas (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]bool{"get_customer_record": true, "trigger_refund": false}, readOnly); diff != "" {
				t.Errorf("ReadOnlyHint (-want +got):\n%s", diff)
			}
			// Spot-check the strictness the issue asks for, independently of customerTools.
			tr := got["trigger_refund"]
			props := tr["properties"].(map[string]any)
			checks := map[string]any{
				"additionalProperties": tr["additionalProperties"],
				"customer_id.pattern":  props["customer_id"].(map[string]any)["pattern"],
				"amount.type":          props["amount"].(map[string]any)["type"],
				"amount.min":           props["amount"].(map[string]any)["exclusiveMinimum"],
				"reason.minLength":     props["reason"].(map[string]any)["minLength"],
			}
			wantChecks := map[string]any{
				"additionalProperties": false,
				"customer_id.pattern":  "^CUST-[A-Z0-9]{5}$",
				"amount.type":          "number",
				"amount.min":           float64(0),
				"reason.minLength":     float64(10),
			}
			if diff := cmp.Diff(wantChecks, checks); diff != "" {
				t.Errorf("trigger_refund schema (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHappyPathsAndNotFound(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			cs, _ := connect(t, v.version, nil, alice)
			got, we := call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00001"})
			if we != nil {
				t.Fatalf("get_customer_record: %v", we)
			}
			want := map[string]any{"found": true, "customer_id": "CUST-00001", "customer": map[string]any{
				"customer_id": "CUST-00001", "name": "Ada Lovelace", "email": "ada@example.com", "plan": "pro", "paid_total": float64(1250), "refunded_total": float64(0),
			}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("get_customer_record (-want +got):\n%s", diff)
			}

			got, we = call(t, cs, "trigger_refund", map[string]any{"customer_id": "CUST-00002", "amount": 12.5, "reason": "item arrived damaged"})
			if we != nil {
				t.Fatalf("trigger_refund: %v", we)
			}
			want = map[string]any{"found": true, "customer_id": "CUST-00002", "refund_id": "RF-000001", "amount": 12.5, "status": "processed", "refunded_total": 12.5}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("trigger_refund (-want +got):\n%s", diff)
			}
			got, _ = call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00002"})
			if total := got["customer"].(map[string]any)["refunded_total"]; total != 12.5 {
				t.Errorf("refunded_total after the refund = %v, want 12.5", total)
			}

			for _, tool := range []string{"get_customer_record", "trigger_refund"} {
				args := map[string]any{"customer_id": "CUST-99999"}
				if tool == "trigger_refund" {
					args["amount"], args["reason"] = 10, "customer not on file"
				}
				got, we := call(t, cs, tool, args)
				if we != nil {
					t.Fatalf("%s for a missing customer: JSON-RPC error %v, want a result with found: false", tool, we)
				}
				if diff := cmp.Diff(map[string]any{"found": false, "customer_id": "CUST-99999"}, got); diff != "" {
					t.Errorf("%s for a missing customer (-want +got):\n%s", tool, diff)
				}
			}
		})
	}
}

func TestValidationErrors(t *testing.T) {
	refund := func(mod func(map[string]any)) map[string]any {
		a := map[string]any{"customer_id": "CUST-00001", "amount": 10.0, "reason": "duplicate charge on card"}
		mod(a)
		return a
	}
	tests := []struct {
		name  string
		tool  string
		args  any
		field string // the field the message must name
	}{
		{"negative_amount", "trigger_refund", refund(func(a map[string]any) { a["amount"] = -5 }), "amount"},
		{"zero_amount", "trigger_refund", refund(func(a map[string]any) { a["amount"] = 0 }), "amount"},
		{"boolean_amount", "trigger_refund", refund(func(a map[string]any) { a["amount"] = true }), "amount"},
		{"string_amount", "trigger_refund", refund(func(a map[string]any) { a["amount"] = "10.0" }), "amount"},
		{"null_amount", "trigger_refund", refund(func(a map[string]any) { a["amount"] = nil }), "amount"},
		{"missing_amount", "trigger_refund", refund(func(a map[string]any) { delete(a, "amount") }), "amount"},
		{"short_reason", "trigger_refund", refund(func(a map[string]any) { a["reason"] = "too short" }), "reason"},
		{"number_reason", "trigger_refund", refund(func(a map[string]any) { a["reason"] = 1234567890 }), "reason"},
		{"malformed_id_refund", "trigger_refund", refund(func(a map[string]any) { a["customer_id"] = "CUST-1" }), "customer_id"},
		{"lowercase_id", "get_customer_record", map[string]any{"customer_id": "cust-00001"}, "customer_id"},
		{"id_with_suffix", "get_customer_record", map[string]any{"customer_id": "CUST-00001X"}, "customer_id"},
		{"numeric_id", "get_customer_record", map[string]any{"customer_id": 1}, "customer_id"},
		{"missing_id", "get_customer_record", map[string]any{}, "customer_id"},
		{"extra_field_get", "get_customer_record", map[string]any{"customer_id": "CUST-00001", "admin": true}, "admin"},
		{"extra_field_refund", "trigger_refund", refund(func(a map[string]any) { a["approved_by"] = "manager" }), "approved_by"},
	}
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			cs, _ := connect(t, v.version, nil, alice)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					got, we := call(t, cs, tt.tool, tt.args)
					if we == nil {
						t.Fatalf("%s(%v) = %v, want JSON-RPC error -32602", tt.tool, tt.args, got)
					}
					if we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, `"`+tt.field+`"`) {
						t.Errorf("%s(%v): error %d %q, want -32602 naming %q", tt.tool, tt.args, we.Code, we.Message, tt.field)
					}
					if d := errData(t, we); d["code"] != "INVALID_ARGUMENTS" {
						t.Errorf("error data code = %v, want INVALID_ARGUMENTS", d["code"])
					}
				})
			}
			// Nothing was refunded by the refused calls.
			got, _ := call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00001"})
			if total := got["customer"].(map[string]any)["refunded_total"]; total != float64(0) {
				t.Errorf("refunded_total after refused calls = %v, want 0", total)
			}
		})
	}
}

func TestUnknownTool(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			cs, _ := connect(t, v.version, nil, alice)
			_, we := call(t, cs, "delete_customer", map[string]any{"customer_id": "CUST-00001"})
			if we == nil || we.Code != -32601 {
				t.Fatalf("unknown tool: got %v, want JSON-RPC error -32601", we)
			}
		})
	}
}

func TestSpendCap(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantScope string
	}{
		{"per_session", []string{"-session-cap", "100", "-user-cap", "1000"}, "session"},
		{"per_user", []string{"-session-cap", "1000", "-user-cap", "100", "-cap-window", "30m"}, "user"},
	}
	for _, v := range versions {
		for _, tt := range tests {
			t.Run(v.name+"/"+tt.name, func(t *testing.T) {
				cs, _ := connect(t, v.version, tt.args, alice)
				refund := func(id string, amount float64) (map[string]any, *jsonrpc.Error) {
					return call(t, cs, "trigger_refund", map[string]any{"customer_id": id, "amount": amount, "reason": "goodwill gesture for delay"})
				}
				if _, we := refund("CUST-00001", 60); we != nil {
					t.Fatalf("first refund of 60 under a cap of 100: %v", we)
				}
				_, we := refund("CUST-00002", 50)
				if we == nil {
					t.Fatal("second refund of 50 (total 110 > 100): allowed, want refused")
				}
				d := errData(t, we)
				retry, _ := d["retry_after_seconds"].(float64)
				if we.Code != -32029 || d["code"] != "SPEND_LIMIT_EXCEEDED" || retry <= 0 || d["retryable"] != true {
					t.Errorf("over the cap: error %d %q data %v; want -32029 SPEND_LIMIT_EXCEEDED, retryable, retry_after_seconds > 0", we.Code, we.Message, d)
				}
				if details, _ := d["details"].(map[string]any); details["scope"] != tt.wantScope {
					t.Errorf("denial details %v, want scope %q", d["details"], tt.wantScope)
				}
				// What is left of the cap can still be used; a refused call consumed nothing.
				if _, we := refund("CUST-00002", 40); we != nil {
					t.Errorf("refund of 40 (total 100): %v, want allowed", we)
				}
				// A customer that does not exist costs nothing.
				if got, we := refund("CUST-99999", 50); we != nil || got["found"] != false {
					t.Errorf("refund to a missing customer at the cap: %v %v, want found: false", got, we)
				}
				if got, _ := call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00002"}); got["customer"].(map[string]any)["refunded_total"] != float64(40) {
					t.Errorf("CUST-00002 refunded_total = %v, want 40", got["customer"])
				}
			})
		}
	}
}

func TestNoIdentity(t *testing.T) {
	envs := []struct{ name, env string }{
		{"unset", ""},
		{"unknown_token", "REFUND_MCP_TOKEN=not-a-token"},
		{"token_of_another_table", "REFUND_MCP_TOKENS={\"tok-x\":{\"sub\":\"x@example.com\"}}"},
	}
	for _, v := range versions {
		for _, e := range envs {
			t.Run(v.name+"/"+e.name, func(t *testing.T) {
				env := []string{}
				if e.env != "" {
					env = append(env, e.env)
				}
				if e.name == "token_of_another_table" {
					env = append(env, alice)
				}
				cs, _ := connect(t, v.version, nil, env...)
				for _, c := range []struct {
					tool string
					args map[string]any
				}{
					{"get_customer_record", map[string]any{"customer_id": "CUST-00001"}},
					{"trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": 5, "reason": "no identity at all"}},
				} {
					got, we := call(t, cs, c.tool, c.args)
					if we == nil {
						t.Fatalf("%s without identity = %v, want refused", c.tool, got)
					}
					if d := errData(t, we); we.Code != -32000 || d["code"] != "UNAUTHENTICATED" {
						t.Errorf("%s without identity: %d %q %v, want -32000 UNAUTHENTICATED", c.tool, we.Code, we.Message, d)
					}
				}
				if _, err := cs.ListTools(context.Background(), nil); err == nil {
					t.Error("tools/list without identity: allowed, want refused")
				}
			})
		}
	}
}

func TestCustomTokens(t *testing.T) {
	cs, _ := connect(t, "", nil, `REFUND_MCP_TOKENS={"tok-carol":{"sub":"carol@example.com","roles":["support"]}}`, "REFUND_MCP_TOKEN=tok-carol")
	if _, we := call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00001"}); we != nil {
		t.Fatalf("with a configured token: %v", we)
	}

	for _, bad := range []string{`not json`, `{}`, `{"tok":[]}`, `{"tok":{"sub":"a","extra":1}}`, `{"":"admin"}`} {
		cmd, stderr := command(nil, "REFUND_MCP_TOKENS="+bad, alice)
		cmd.Stdin = strings.NewReader("")
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Errorf("REFUND_MCP_TOKENS=%s: exit %v, want non-zero", bad, err)
		}
		if !strings.Contains(stderr.String(), "REFUND_MCP_TOKENS") {
			t.Errorf("REFUND_MCP_TOKENS=%s: stderr does not name the variable:\n%s", bad, stderr)
		}
	}
}

// TestDryRun: a dry run of trigger_refund (asked for in the request's
// _meta) answers in the tool's own output shape, which a client that checks
// results against the output schema accepts, and refunds nothing.
func TestDryRun(t *testing.T) {
	cs, _ := connect(t, "", nil, alice)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "trigger_refund",
		Arguments: map[string]any{"customer_id": "CUST-00001", "amount": 40, "reason": "a dry run of a refund"},
		Meta:      mcp.Meta{dryrun.MetaKey: true},
	})
	if err != nil || res.IsError {
		t.Fatalf("dry run: %v, %+v", err, res)
	}
	got := toMap(t, res.StructuredContent)
	id, _ := got["refund_id"].(string)
	if got["status"] != "dry_run" || got["found"] != true || got["amount"] != 40.0 || !strings.HasPrefix(id, dryrun.IDPrefix) {
		t.Errorf("dry run result %v, want status dry_run, found, amount 40 and a %s id", got, dryrun.IDPrefix)
	}
	var schema *mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "trigger_refund" {
			schema = tool
		}
	}
	if schema == nil {
		t.Fatal("trigger_refund not listed")
	}
	v, err := mcpguard.NewValidator(toMap(t, schema.OutputSchema), &mcpguard.ValidationOptions{Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(mustMarshal(t, res.StructuredContent)); err != nil {
		t.Errorf("dry run result does not fit the output schema: %v", err)
	}
	rec, _ := call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00001"})
	if total := rec["customer"].(map[string]any)["refunded_total"]; total != 0.0 {
		t.Errorf("refunded_total after a dry run = %v, want 0", total)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
