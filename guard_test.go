package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestEndToEndCodes(t *testing.T) {
	tests := []struct {
		name string
		id   *mcpguard.Identity
		show bool
		tool string
		args any
		want string // mcpguard code of the tool-error result; "" = success
	}{
		{"unauthenticated_typed", nil, false, "echo", map[string]any{"text": "hi"}, "UNAUTHENTICATED"},
		{"unauthenticated_raw", nil, false, "add_note", map[string]any{"title": "x"}, "UNAUTHENTICATED"},
		{"typed_allowed", bob, false, "echo", map[string]any{"text": "hi"}, ""},
		{"raw_write_allowed", bob, false, "add_note", map[string]any{"title": "x"}, ""},
		{"role_forbidden", bob, true, "admin_stats", map[string]any{}, "FORBIDDEN"},
		{"role_allowed", alice, true, "admin_stats", map[string]any{}, ""},
		{"write_not_allowlisted", alice, false, "delete_all", map[string]any{}, "WRITE_NOT_ALLOWED"},
		{"string_for_number", bob, false, "add_note", map[string]any{"title": "x", "amount": "10.0"}, "INVALID_ARGUMENTS"},
		{"bool_for_number", bob, false, "add_note", map[string]any{"title": "x", "amount": true}, "INVALID_ARGUMENTS"},
		{"float_for_integer", bob, false, "add_note", map[string]any{"title": "x", "priority": 2.5}, "INVALID_ARGUMENTS"},
		{"zero_not_positive", bob, false, "add_note", map[string]any{"title": "x", "amount": 0}, "INVALID_ARGUMENTS"},
		{"unknown_field_without_additional_properties", bob, false, "add_note", map[string]any{"title": "x", "admin": true}, "INVALID_ARGUMENTS"},
		{"unknown_field_typed_tool", bob, false, "echo", map[string]any{"text": "x", "admin": true}, "INVALID_ARGUMENTS"},
		{"format_asserted", bob, false, "add_note", map[string]any{"title": "x", "due": "31/12/2026"}, "INVALID_ARGUMENTS"},
		{"format_ok", bob, false, "add_note", map[string]any{"title": "x", "due": "2026-12-31"}, ""},
		{"string_too_long", bob, false, "add_note", map[string]any{"title": strings.Repeat("x", 41)}, "INVALID_ARGUMENTS"},
		{"control_char", bob, false, "add_note", map[string]any{"title": "a\x1b[2Jb"}, "INVALID_ARGUMENTS"},
		{"missing_required", bob, false, "add_note", map[string]any{}, "INVALID_ARGUMENTS"},
		{"duplicate_key", bob, false, "add_note", json.RawMessage(`{"title":"x","title":"y"}`), "INVALID_ARGUMENTS"},
		{"arguments_not_object", bob, false, "add_note", json.RawMessage(`[1,2]`), "INVALID_ARGUMENTS"},
		{"panic_becomes_internal", bob, false, "panic_tool", map[string]any{}, "INTERNAL"},
		{"nil_nil_becomes_internal", bob, false, "nil_tool", map[string]any{}, "INTERNAL"},
		{"plain_error_becomes_internal", bob, false, "err_tool", map[string]any{}, "INTERNAL"},
		{"bad_output_invalid_response", bob, false, "bad_output", map[string]any{}, "INVALID_RESPONSE"},
	}
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					h := newHarness(t, basePolicy(tt.show), nil)
					cs := h.connect(tt.id, clientOpts{version: v})
					res, err := call(t, cs, tt.tool, tt.args)
					if err != nil {
						t.Fatalf("CallTool(%s, %v): protocol error %v", tt.tool, tt.args, err)
					}
					if got := errorCode(t, res); got != tt.want {
						t.Fatalf("CallTool(%s, %v) code = %q, want %q; result %s", tt.tool, tt.args, got, tt.want, mustJSON(res))
					}
					evs := h.sink.all()
					if len(evs) == 0 {
						t.Fatal("no audit event")
					}
					last := evs[len(evs)-1]
					if last.Code != tt.want || last.Allowed != (tt.want == "") || last.Tool != tt.tool {
						t.Errorf("audit outcome = %s %q allowed %v, want %q", last.Tool, last.Code, last.Allowed, tt.want)
					}
					// The process survived: the next call works.
					if tt.id != nil {
						if res, err := call(t, cs, "echo", map[string]any{"text": "still alive"}); err != nil || res.IsError {
							t.Fatalf("follow-up call failed: %v %s", err, mustJSON(res))
						}
					}
				})
			}
		})
	}
}

func eventsFor(evs []audit.Event, tool string) []audit.Event {
	var out []audit.Event
	for _, e := range evs {
		if e.Tool == tool && e.Phase == "outcome" {
			out = append(out, e)
		}
	}
	return out
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestMessagesLeakNothing(t *testing.T) {
	h := newHarness(t, basePolicy(false), nil)
	cs := h.connect(bob, clientOpts{})
	for _, tc := range []struct {
		tool string
		args any
	}{
		{"panic_tool", map[string]any{}},
		{"err_tool", map[string]any{}},
		{"add_note", map[string]any{"title": "x", "amount": "SECRET-VALUE-123"}},
	} {
		res, err := call(t, cs, tc.tool, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		out := mustJSON(res)
		for _, secret := range []string{"secret-internal-state", "hunter2", "SECRET-VALUE-123", "goroutine", "bob-secret"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s result leaks %q: %s", tc.tool, secret, out)
			}
		}
	}
}

func TestHiddenToolLooksUnknown(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			h := newHarness(t, basePolicy(false), nil)
			cs := h.connect(bob, clientOpts{version: v})
			_, errHidden := call(t, cs, "admin_stats", map[string]any{})
			_, errUnknown := call(t, cs, "admin_nonexistent", map[string]any{})
			// The same name must give the same bytes: ask for a tool that
			// does not exist under the hidden tool's name on a bare server.
			bare := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
			ct, st := mcp.NewInMemoryTransports()
			ss, _ := bare.Connect(context.Background(), st, nil)
			defer ss.Close()
			bc, _ := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
			defer bc.Close()
			_, errBare := call(t, bc, "admin_stats", map[string]any{})

			wh, wu, wb := wireError(errHidden), wireError(errUnknown), wireError(errBare)
			if wh == nil || wu == nil || wb == nil {
				t.Fatalf("want JSON-RPC errors, got hidden=%v unknown=%v bare=%v", errHidden, errUnknown, errBare)
			}
			hb, _ := json.Marshal(wh)
			bb, _ := json.Marshal(wb)
			if string(hb) != string(bb) {
				t.Errorf("hidden tool error differs from the SDK's unknown-tool error:\nhidden %s\nbare   %s", hb, bb)
			}
			ub, _ := json.Marshal(wu)
			if want := strings.ReplaceAll(string(hb), "admin_stats", "admin_nonexistent"); ub == nil || string(ub) != want {
				t.Errorf("unknown tool error %s, want %s", ub, want)
			}
		})
	}
}

func TestToolsListFilteredPerRole(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			h := newHarness(t, basePolicy(false), nil)
			names := func(id *mcpguard.Identity) []string {
				cs := h.connect(id, clientOpts{version: v})
				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, tl := range res.Tools {
					out = append(out, tl.Name)
				}
				return out
			}
			all := []string{"add_note", "admin_stats", "bad_output", "delete_all", "echo", "err_tool", "nil_tool", "panic_tool", "whoami", "wipe"}
			if diff := cmp.Diff(all, names(alice)); diff != "" {
				t.Errorf("admin sees (-want +got):\n%s", diff)
			}
			user := []string{"add_note", "bad_output", "delete_all", "echo", "err_tool", "nil_tool", "panic_tool", "whoami", "wipe"}
			if diff := cmp.Diff(user, names(bob)); diff != "" {
				t.Errorf("user sees (-want +got):\n%s", diff)
			}
			cs := h.connect(nil, clientOpts{version: v})
			_, err := cs.ListTools(context.Background(), nil)
			var we *jsonrpc.Error
			if !errors.As(err, &we) || !strings.Contains(string(we.Data), `"code":"UNAUTHENTICATED"`) {
				t.Errorf("unauthenticated tools/list error = %v, want an UNAUTHENTICATED error", err)
			}
			if !errors.As(err, &we) || !strings.Contains(string(we.Data), `"correlation_id":"`) {
				t.Errorf("unauthenticated tools/list error = %#v, want a correlation_id in its data", err)
			}
		})
	}
}

func TestAuthPassthrough(t *testing.T) {
	h := newHarness(t, basePolicy(false), nil)
	for _, id := range []*mcpguard.Identity{alice, bob} {
		cs := h.connect(id, clientOpts{})
		res, err := call(t, cs, "whoami", map[string]any{})
		if err != nil || res.IsError {
			t.Fatalf("whoami: %v %s", err, mustJSON(res))
		}
		want := id.Principal.Subject + " " + id.Credential.Reveal()
		if got := res.Content[0].(*mcp.TextContent).Text; got != want {
			t.Errorf("handler saw %q, want %q", got, want)
		}
		res, _ = call(t, cs, "echo", map[string]any{"text": "x"})
		if got := res.StructuredContent.(map[string]any)["by"]; got != id.Principal.Subject {
			t.Errorf("typed handler saw principal %v, want %s", got, id.Principal.Subject)
		}
	}
	for _, e := range h.sink.all() {
		if s := mustJSON(e); strings.Contains(s, "secret") {
			t.Errorf("audit event leaks the credential: %s", s)
		}
	}
}

func TestProtocolErrorMode(t *testing.T) {
	tests := []struct {
		name string
		id   *mcpguard.Identity
		tool string
		args any
		code int64
	}{
		{"unauthenticated", nil, "echo", map[string]any{"text": "x"}, -32000},
		{"forbidden", bob, "admin_stats", map[string]any{}, -32001},
		{"write_not_allowed", bob, "delete_all", map[string]any{}, -32001},
		{"invalid_arguments", bob, "add_note", map[string]any{"title": 5}, -32602},
		{"unknown_tool", bob, "nope", map[string]any{}, -32601},
		{"internal", bob, "panic_tool", map[string]any{}, -32603},
		{"invalid_response", bob, "bad_output", map[string]any{}, -32603},
	}
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			h := newHarness(t, basePolicy(true), &mcpguard.Options{ProtocolErrors: true, NotFoundCode: -32601})
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					cs := h.connect(tt.id, clientOpts{version: v})
					res, err := call(t, cs, tt.tool, tt.args)
					we := wireError(err)
					if we == nil {
						t.Fatalf("CallTool(%s) = %s, %v; want JSON-RPC error %d", tt.tool, mustJSON(res), err, tt.code)
					}
					if we.Code != tt.code {
						t.Errorf("CallTool(%s) code = %d (%s), want %d", tt.tool, we.Code, we.Message, tt.code)
					}
				})
			}
		})
	}
	t.Run("message_names_the_field", func(t *testing.T) {
		h := newHarness(t, basePolicy(true), &mcpguard.Options{ProtocolErrors: true})
		cs := h.connect(bob, clientOpts{})
		_, err := call(t, cs, "add_note", map[string]any{"title": "x", "amount": -3})
		if we := wireError(err); we == nil || !strings.Contains(we.Message, `"amount"`) || strings.Contains(we.Message, "-3") {
			t.Errorf("error = %v, want a message naming amount without its value", err)
		}
	})
}

func TestDryRunNeverTouchesDownstream(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			h := newHarness(t, basePolicy(false), &mcpguard.Options{DryRun: true})
			cs := h.connect(bob, clientOpts{version: v})
			for range 5 {
				res, err := call(t, cs, "add_note", map[string]any{"title": "x"})
				if err != nil || res.IsError {
					t.Fatalf("dry-run call: %v %s", err, mustJSON(res))
				}
				sc, _ := res.StructuredContent.(map[string]any)
				if sc["dry_run"] != true || !strings.HasPrefix(sc["id"].(string), dryrun.IDPrefix) {
					t.Errorf("dry-run result = %s", mustJSON(res))
				}
			}
			if n := h.down.calls.Load(); n != 0 {
				t.Errorf("downstream touched %d times in dry-run, want 0", n)
			}
			// Reads are unaffected.
			if res, _ := call(t, cs, "echo", map[string]any{"text": "x"}); res.IsError {
				t.Errorf("read in dry-run mode failed: %s", mustJSON(res))
			}
			for _, e := range eventsFor(h.sink.all(), "add_note") {
				if !e.DryRun {
					t.Errorf("audit event without dry_run: %+v", e)
				}
			}
		})
	}
	t.Run("off_calls_downstream_once", func(t *testing.T) {
		h := newHarness(t, basePolicy(false), nil)
		cs := h.connect(bob, clientOpts{})
		if res, err := call(t, cs, "add_note", map[string]any{"title": "x"}); err != nil || res.IsError {
			t.Fatalf("call: %v %s", err, mustJSON(res))
		}
		if n := h.down.calls.Load(); n != 1 {
			t.Errorf("downstream called %d times, want 1", n)
		}
	})
	t.Run("client_preview_and_aware_handler", func(t *testing.T) {
		h := newHarness(t, basePolicy(false), &mcpguard.Options{Tools: map[string]mcpguard.ToolOptions{"add_note": {DryRunAware: true}}})
		cs := h.connect(bob, clientOpts{})
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "x"}, Meta: mcp.Meta{dryrun.MetaKey: true}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %s", err, mustJSON(res))
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != "would add note" {
			t.Errorf("aware handler answered %q, want the dry-run branch", got)
		}
	})
	t.Run("client_cannot_turn_it_off", func(t *testing.T) {
		h := newHarness(t, basePolicy(false), &mcpguard.Options{DryRun: true})
		cs := h.connect(bob, clientOpts{})
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "x"}, Meta: mcp.Meta{dryrun.MetaKey: false}})
		if err != nil {
			t.Fatal(err)
		}
		if n := h.down.calls.Load(); n != 0 {
			t.Errorf("downstream touched %d times, want 0", n)
		}
	})
}

func TestRateLimit(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Session, Max: 3, Window: 60e9}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, basePolicy(false), &mcpguard.Options{Limiter: lim})
			cs := h.connect(bob, clientOpts{version: v})
			var codes []string
			for range 4 {
				res, err := call(t, cs, "echo", map[string]any{"text": "x"})
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, errorCode(t, res))
				if res.IsError {
					var body struct {
						Error struct {
							RetryAfter *float64 `json:"retry_after_seconds"`
						} `json:"error"`
					}
					json.Unmarshal([]byte(mustJSON(res.StructuredContent)), &body)
					if body.Error.RetryAfter == nil || *body.Error.RetryAfter < 1 {
						t.Errorf("denial without retry_after_seconds: %s", mustJSON(res))
					}
				}
			}
			if diff := cmp.Diff([]string{"", "", "", "RATE_LIMIT_EXCEEDED"}, codes); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteAheadIntent(t *testing.T) {
	h := newHarness(t, basePolicy(false), nil)
	cs := h.connect(bob, clientOpts{})
	if res, _ := call(t, cs, "add_note", map[string]any{"title": "x"}); res.IsError {
		t.Fatalf("write failed: %s", mustJSON(res))
	}
	evs := h.sink.all()
	if len(evs) != 2 || evs[0].Phase != "intent" || evs[1].Phase != "outcome" || evs[0].CorrelationID != evs[1].CorrelationID {
		t.Fatalf("events = %+v, want intent then outcome with one correlation id", evs)
	}
	h.sink.fail.Store(true)
	res, _ := call(t, cs, "add_note", map[string]any{"title": "x"})
	if got := errorCode(t, res); got != "AUDIT_UNAVAILABLE" {
		t.Errorf("write with a failing sink = %q, want AUDIT_UNAVAILABLE", got)
	}
	if n := h.down.calls.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1 (not for the refused write)", n)
	}
	// Reads proceed by default.
	if res, _ := call(t, cs, "echo", map[string]any{"text": "x"}); res.IsError {
		t.Errorf("read with a failing sink refused: %s", mustJSON(res))
	}
}

func TestInstallStartupErrors(t *testing.T) {
	tests := []struct {
		name string
		add  func(s *mcp.Server)
		want string
	}{
		{"no_rule", func(s *mcp.Server) {
			s.AddTool(&mcp.Tool{Name: "mystery", InputSchema: json.RawMessage(`{"type":"object"}`)}, nil)
		}, "no rule"},
		{"hint_contradicts_class", func(s *mcp.Server) {
			s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false}}, nil)
			s.AddTool(&mcp.Tool{Name: "add_note", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, nil)
		}, "ReadOnlyHint"},
		{"ref_to_file", func(s *mcp.Server) {
			s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)}, nil)
		}, "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			tt.add(s)
			pol, _ := policy.New(basePolicy(false))
			g, err := mcpguard.New(pol, &sessionAuth{}, &mcpguard.Options{Confirmer: testSigner(t, nil)})
			if err != nil {
				t.Fatal(err)
			}
			err = g.Install(s)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Install error = %v, want containing %q", err, tt.want)
			}
		})
	}
}

func TestToolAddedAfterInstall(t *testing.T) {
	h := newHarness(t, basePolicy(false), nil)
	cs := h.connect(bob, clientOpts{})
	// "late" has no rule: refused as unknown, however it was registered.
	h.srv.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("late"), nil
	})
	if _, err := call(t, cs, "late", map[string]any{}); wireError(err) == nil {
		t.Errorf("tool without a rule added after Install was callable: %v", err)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name == "late" {
			t.Error("tool without a rule is listed")
		}
	}
}

// TestToolReplacedAfterInstall replaces a tool under the same name while no
// session listens for tools/list_changed (the default protocol version gets
// no such notification without subscriptions/listen): within a second the
// guard enforces the new schema, and a replacement whose ReadOnlyHint
// contradicts its rule is refused.
func TestToolReplacedAfterInstall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, basePolicy(false), nil)
	cs := h.connect(bob, clientOpts{})
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("ok"), nil
	}
	if res, err := call(t, cs, "whoami", map[string]any{"n": 5}); err != nil || res.IsError {
		t.Fatalf("before the replacement: %v %s", err, mustJSON(res))
	}
	h.srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":3}}}`)}, handler)
	h.srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false}}, handler)
	time.Sleep(relistWait)
	res, err := call(t, cs, "whoami", map[string]any{"n": 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != string(mcpguard.CodeInvalidArguments) {
		t.Errorf("call against the replaced schema: code %q, want %s (%s)", got, mcpguard.CodeInvalidArguments, mustJSON(res))
	}
	if res, err := call(t, cs, "whoami", map[string]any{"n": 2}); err != nil || res.IsError {
		t.Errorf("valid call after the replacement: %v %s", err, mustJSON(res))
	}
	if _, err := call(t, cs, "echo", map[string]any{}); wireError(err) == nil {
		t.Errorf("a read tool replaced by one hinting a write was callable: %v", err)
	}
}

// relistWait is how long a test waits for the guard to re-list the tools.
const relistWait = 1100 * time.Millisecond
