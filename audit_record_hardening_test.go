package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAuditCostIsCharged checks that an outcome record's cost is what the
// call was charged against the spend caps: the tool's cost for a call the
// limiter admitted (or, without a limiter, one that got that far), and
// nothing for a call refused before or by the limiter, or for a dry run.
// Adding up the trail's costs must not count refused calls.
func TestAuditCostIsCharged(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "search", Class: policy.Read, Cost: 2},
			{Name: "create", Class: policy.Write, Cost: 5},
			{Name: "drop", Class: policy.Write, Cost: 7},
		},
		WriteAllowlist: []string{"create"},
	})
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, lim *limiter.Limiter, calls []*mcp.CallToolRequest) []audit.Event {
		t.Helper()
		sink := &memSink{}
		g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Limiter: lim, NoWriteAhead: true, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		handlers := map[string]mcp.ToolHandler{}
		for _, name := range []string{"search", "create", "drop"} {
			h, err := g.Wrap(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
			if err != nil {
				t.Fatal(err)
			}
			handlers[name] = h
		}
		for _, r := range calls {
			handlers[r.Params.Name](context.Background(), r)
		}
		return sink.all()
	}
	req := func(name string, meta mcp.Meta) *mcp.CallToolRequest {
		return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(`{}`), Meta: meta}}
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := run(t, lim, []*mcp.CallToolRequest{
		req("search", nil),
		req("create", mcp.Meta{dryrun.MetaKey: true}),
		req("search", nil), // the third call: refused by the rate limit
	})
	type rec struct {
		code string
		cost float64
	}
	var got []rec
	for _, e := range evs {
		got = append(got, rec{e.Code, e.Cost})
	}
	want := []rec{{"", 2}, {"", 0}, {string(mcpguard.CodeRateLimitExceeded), 0}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("records (code, cost) %v, want %v", got, want)
	}

	// Without a limiter: the cost of a call that got past step 8, and
	// nothing for a write refused before it.
	evs = run(t, nil, []*mcp.CallToolRequest{req("create", nil), req("drop", nil)})
	got = got[:0]
	for _, e := range evs {
		got = append(got, rec{e.Code, e.Cost})
	}
	want = []rec{{"", 5}, {string(mcpguard.CodeWriteNotAllowed), 0}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("without a limiter: records (code, cost) %v, want %v", got, want)
	}
}

// TestAuditSessionFromSessionKey checks that where the MCP session has no
// id (stdio, in memory, a direct call), the audit records carry the session
// key of Options.SessionKey, the limiter's, so that the trail can be
// queried by the session the limiter counted; without SessionKey they carry
// none (the default key, a subject or a pointer, is no session id).
func TestAuditSessionFromSessionKey(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "search", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	r := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "search", Arguments: json.RawMessage(`{}`)}}
	for _, tc := range []struct {
		key  func(*mcp.CallToolRequest, *mcpguard.Identity) string
		want string
	}{
		{func(_ *mcp.CallToolRequest, id *mcpguard.Identity) string { return "term-" + id.Principal.Subject }, "term-bob"},
		{nil, ""},
	} {
		sink := &memSink{}
		g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, SessionKey: tc.key, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		h, err := g.Wrap(&mcp.Tool{Name: "search", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
		if err != nil {
			t.Fatal(err)
		}
		h(context.Background(), r)
		if evs := sink.all(); len(evs) != 1 || evs[0].SessionID != tc.want {
			t.Errorf("SessionKey set %v: records %+v, want one with session %q", tc.key != nil, evs, tc.want)
		}
	}
}

// TestFailedWriteNotRetryable checks that a write whose handler started and
// then failed (its upstream unavailable, or the call timed out) is reported
// as not retryable: it may have written, and a model told to retry would
// write twice. The same failure of a read stays retryable.
func TestFailedWriteNotRetryable(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "search", Class: policy.Read},
			{Name: "create", Class: policy.Write},
		},
		WriteAllowlist: []string{"create"},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{NoWriteAhead: true, Timeout: 20 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	failures := map[string]mcp.ToolHandler{
		"upstream": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, mcpguard.ErrUpstreamUnavailable
		},
		"timeout": func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	for how, fail := range failures {
		for tool, want := range map[string]bool{"search": true, "create": false} {
			h, err := g.Wrap(&mcp.Tool{Name: tool, InputSchema: json.RawMessage(`{"type":"object"}`)}, fail)
			if err != nil {
				t.Fatal(err)
			}
			res, _ := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: json.RawMessage(`{}`)}})
			var body struct {
				Error struct {
					Code      string `json:"code"`
					Retryable bool   `json:"retryable"`
				} `json:"error"`
			}
			raw, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(raw, &body); err != nil || !res.IsError {
				t.Fatalf("%s %s: %s", how, tool, raw)
			}
			if body.Error.Code != string(mcpguard.CodeUpstreamUnavailable) || body.Error.Retryable != want {
				t.Errorf("%s failure of %s: %s, want UPSTREAM_UNAVAILABLE with retryable %v", how, tool, raw, want)
			}
		}
	}
}

// TestHandlerSeesCorrelationID checks that a handler can name the audit
// record of its call: CorrelationID of its context is the id the guard
// puts in the record (and in its refusals), in the pipeline and inside the
// stand-alone Audit middleware; outside both it is "".
func TestHandlerSeesCorrelationID(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "search", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	var seen string
	handler := func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		seen = mcpguard.CorrelationID(ctx)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	r := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "search", Arguments: json.RawMessage(`{}`)}}

	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "search", InputSchema: json.RawMessage(`{"type":"object"}`)}, handler)
	if err != nil {
		t.Fatal(err)
	}
	h(context.Background(), r)
	if evs := sink.all(); len(evs) != 1 || seen == "" || evs[0].CorrelationID != seen {
		t.Errorf("pipeline: the handler saw %q, the record %+v", seen, evs)
	}

	sink = &memSink{}
	seen = "unset"
	mcpguard.Chain(mustAudit(t, sink, &mcpguard.Options{Logger: quiet}))(handler)(context.Background(), r)
	if evs := sink.all(); len(evs) != 1 || seen == "" || evs[0].CorrelationID != seen {
		t.Errorf("Audit middleware: the handler saw %q, the record %+v", seen, evs)
	}

	if id := mcpguard.CorrelationID(mcpguard.NewContext(context.Background(), bob)); id != "" {
		t.Errorf("a context of neither: %q", id)
	}
}

// TestAuthenticatorUpstreamUnavailable checks that an authenticator that
// could not reach its identity provider can say so: its UPSTREAM_UNAVAILABLE
// refusal reaches the caller as such (retryable), in the pipeline and in
// the stand-alone Authenticate; any other error, whatever its text, is
// UNAUTHENTICATED with the guard's own message.
func TestAuthenticatorUpstreamUnavailable(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "search", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	r := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "search", Arguments: json.RawMessage(`{}`)}}
	for _, tc := range []struct {
		err       error
		code, msg string
		retryable bool
	}{
		{mcpguard.Deny(mcpguard.CodeUpstreamUnavailable, "the identity provider did not answer"), "UPSTREAM_UNAVAILABLE", "the identity provider did not answer", true},
		{mcpguard.Deny(mcpguard.CodeUnauthenticated, "session expired"), "UNAUTHENTICATED", "session expired", false},
		{errors.New("lookup of token sk-secret failed"), "UNAUTHENTICATED", "authentication required", false},
		{mcpguard.Deny(mcpguard.CodeConcurrencyLimitExceeded, "too many session checks in flight"), "CONCURRENCY_LIMIT_EXCEEDED", "too many session checks in flight", true},
		{retryIn(mcpguard.Deny(mcpguard.CodeRateLimitExceeded, "too many session checks"), 3*time.Second), "RATE_LIMIT_EXCEEDED", "too many session checks", true},
		// A code an authenticator may not report: it knows nothing of tools.
		{mcpguard.Deny(mcpguard.CodeForbidden, "admins only"), "UNAUTHENTICATED", "authentication required", false},
	} {
		authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return nil, tc.err })
		g, err := mcpguard.New(pol, authn, &mcpguard.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		guarded, err := g.Wrap(&mcp.Tool{Name: "search", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
		if err != nil {
			t.Fatal(err)
		}
		for name, h := range map[string]mcp.ToolHandler{"pipeline": guarded, "Authenticate": mcpguard.Authenticate(authn)(noop)} {
			res, _ := h(context.Background(), r)
			var body struct {
				Error struct {
					Code      string `json:"code"`
					Message   string `json:"message"`
					Retryable bool   `json:"retryable"`
				} `json:"error"`
			}
			raw, _ := json.Marshal(res.StructuredContent)
			if json.Unmarshal(raw, &body) != nil || body.Error.Code != tc.code || body.Error.Message != tc.msg || body.Error.Retryable != tc.retryable {
				t.Errorf("%s, authenticator error %v: %s; want %s %q retryable %v", name, tc.err, raw, tc.code, tc.msg, tc.retryable)
			}
			var de *mcpguard.DenialError
			if errors.As(tc.err, &de) && tc.code == string(de.Code) {
				var got *mcpguard.DenialError
				if !errors.As(res.GetError(), &got) || got.RetryAfter != de.RetryAfter {
					t.Errorf("%s, authenticator error %v: refusal %v, want its RetryAfter %v", name, tc.err, got, de.RetryAfter)
				}
			}
		}
	}
}

// TestArgsKeyHidesArguments checks Options.ArgsKey: the records' hash is
// the keyed one (audit.ArgsHMAC), not the plain hash anyone can compute
// from a guess of the arguments, both with a plain sink and with a Keeper
// (which otherwise hashes in its batches, unkeyed); a key shorter than 16
// bytes is refused.
func TestArgsKeyHidesArguments(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "lookup", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("a key of thirty-two bytes, okay!")
	args := json.RawMessage(`{"userId":"u-1002"}`)
	r := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "lookup", Arguments: args}}
	path := filepath.Join(t.TempDir(), "a.jsonl")
	jsonl, err := audit.OpenJSONL(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer jsonl.Close()
	mem := &memSink{}
	for name, sink := range map[string]audit.Sink{"plain": mem, "keeper": jsonl} {
		g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, ArgsKey: key, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		h, err := g.Wrap(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
		if err != nil {
			t.Fatal(err)
		}
		h(context.Background(), r)
		var evs []audit.Event
		if name == "plain" {
			evs = mem.all()
		} else {
			if err := jsonl.Flush(); err != nil {
				t.Fatal(err)
			}
			evs, err = audit.QueryJSONL(path, audit.Filter{})
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(evs) != 1 || evs[0].ArgsSHA256 != audit.ArgsHMAC(key, args) {
			t.Errorf("%s sink: records %+v, want one with hash %s (plain hash %s)", name, evs, audit.ArgsHMAC(key, args), audit.ArgsSHA256(args))
		}
	}
	if _, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{ArgsKey: []byte("short")}); err == nil {
		t.Error("a 5-byte ArgsKey was accepted")
	}
}

func retryIn(d *mcpguard.DenialError, after time.Duration) *mcpguard.DenialError {
	d.RetryAfter = after
	return d
}
