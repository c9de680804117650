package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// phaseSink records intents and fails every outcome.
type phaseSink struct{ memSink }

func (s *phaseSink) Write(ctx context.Context, e *audit.Event) error {
	if e.Phase == audit.PhaseOutcome {
		return errors.New("outcome sink down")
	}
	return s.memSink.Write(ctx, e)
}

// TestAuditFailClosedKeepsWriteThatRan: AuditFailClosed refuses a read
// whose outcome cannot be recorded, but a write whose handler ran keeps its
// result: AUDIT_UNAVAILABLE is retryable, and a model that retried would
// repeat a write that was done.
func TestAuditFailClosedKeepsWriteThatRan(t *testing.T) {
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	sink := &phaseSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, AuditFailClosed: true, Confirmer: testSigner(t, nil), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s := &stub{}
	h, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: noteSchema}, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h(context.Background(), req("add_note", `{"title":"x"}`))
	if s.ran != 1 {
		t.Fatalf("write handler ran %d times, want 1", s.ran)
	}
	if got := codeOf(t, res, err); got != "" {
		t.Errorf("write that ran (intent recorded, outcome sink down): code %q, want the handler's success; result %s", got, mustJSON(res))
	}
	// A read is refused.
	read, err := g.Wrap(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	res, err = read(context.Background(), req("echo", `{}`))
	if got := codeOf(t, res, err); got != "AUDIT_UNAVAILABLE" {
		t.Errorf("read with the outcome sink down: code %q, want AUDIT_UNAVAILABLE", got)
	}
}

// TestTypedToolPlainErrorIsInternal: a typed tool's (mcp.AddTool) plain
// error, which the go-sdk's wrapper puts in a tool-error result, becomes
// INTERNAL without its text, as a raw tool's does.
func TestTypedToolPlainErrorIsInternal(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "typed", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{}, errors.New("db password=hunter2 refused")
		})
	cs := installReadTool(t, srv, "echo")
	res, err := call(t, cs, "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	out := mustJSON(res)
	if strings.Contains(out, "hunter2") || errorCode(t, res) != string(mcpguard.CodeInternal) {
		t.Errorf("typed tool's plain error: result %s, want an INTERNAL denial without the error text", out)
	}
}

// TestAuditMiddlewareRecordsPanic: Audit writes one outcome event per call,
// also when the handler panics and Recover is outside it (the pipeline
// order of the docs).
func TestAuditMiddlewareRecordsPanic(t *testing.T) {
	sink := &memSink{}
	s := &stub{boom: true}
	h := mcpguard.Chain(mcpguard.Recover(quiet), mcpguard.Authenticate(fixed(bob)), mustAudit(t, sink, &mcpguard.Options{Logger: quiet}))(s.handle)
	res, err := h(context.Background(), req("echo", `{"text":"hi"}`))
	if got := codeOf(t, res, err); got != "INTERNAL" {
		t.Fatalf("code %q, want INTERNAL", got)
	}
	if evs := sink.all(); len(evs) != 1 {
		t.Errorf("%d audit events for a call whose handler panicked, want 1", len(evs))
	}
}

func connectPlain(t *testing.T, srv *mcp.Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, srv, copts, "")
}

func connectVersion(t *testing.T, srv *mcp.Server, copts *mcp.ClientOptions, v string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "review", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// TestStaleListingDoesNotOverwriteNewer: a re-listing started before a tool
// was replaced can finish after one made after the tools/list_changed
// notification; it must not be installed, or the replaced tool would be
// guarded with the schema it no longer has.
func TestStaleListingDoesNotOverwriteNewer(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "relist", Version: "1"}, nil)
	var got atomic.Int64
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ N int64 }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		got.Store(in.N)
		return textResult("ok"), nil
	}
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}, handler)

	// A receiving middleware added before Install runs below the guard and
	// sees its re-listings: it can hold one after it read the tools.
	var armed atomic.Bool
	gotOld, release := make(chan struct{}), make(chan struct{})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, r mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && armed.CompareAndSwap(true, false) {
				res, err := next(ctx, method, r)
				close(gotOld)
				<-release
				return res, err
			}
			return next(ctx, method, r)
		}
	})
	guardWithPolicy(t, srv, policy.Config{Tools: []policy.ToolRule{{Name: "t", Class: policy.Read}, {Name: "x", Class: policy.Read}}})
	cs, waitChanged := connectWatchingChanges(t, srv)

	// 1. An unrelated tool is added: the registry is stale.
	srv.AddTool(&mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}, handler)
	waitChanged()
	// 2. Call A re-lists and is held after reading the tools (old "t").
	armed.Store(true)
	aDone := make(chan error, 1)
	go func() {
		_, err := call(t, cs, "t", map[string]any{"n": 1})
		aDone <- err
	}()
	select {
	case <-gotOld:
	case <-time.After(5 * time.Second):
		t.Fatal("call A did not re-list")
	}
	// 3. "t" is replaced with a stricter schema; the guard is notified.
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":10}}}`)}, handler)
	waitChanged()
	// 4. Call B re-lists (new "t") and is checked against the new schema.
	if res, err := call(t, cs, "t", map[string]any{"n": 50}); err != nil || errorCode(t, res) != string(mcpguard.CodeInvalidArguments) {
		t.Fatalf("call B against the new schema: %v %s, want INVALID_ARGUMENTS", err, mustJSON(res))
	}
	// 5. A's older listing completes after B's.
	close(release)
	if err := <-aDone; err != nil {
		t.Fatalf("call A: %v", err)
	}
	// 6. The new schema must still be enforced.
	res, err := call(t, cs, "t", map[string]any{"n": 1000})
	if err != nil {
		t.Fatal(err)
	}
	if code := errorCode(t, res); code != string(mcpguard.CodeInvalidArguments) {
		t.Errorf("after a stale re-listing finished last: code %q (handler got n=%d), want INVALID_ARGUMENTS from the replaced tool's schema", code, got.Load())
	}
}

type countIn struct {
	N int `json:"n"`
}
type countOut struct {
	N int `json:"n"`
}

// TestTypedToolOutputSchema: an output that fails the tool's output schema
// is INVALID_RESPONSE for a typed tool too, whose go-sdk wrapper checks it
// first and returns a plain error.
func TestTypedToolOutputSchema(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "typed", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "count", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, countOut, error) {
			return nil, countOut{N: -1}, nil
		})
	cs := installReadTool(t, srv, "count")
	res, err := call(t, cs, "count", map[string]any{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	if code := errorCode(t, res); code != string(mcpguard.CodeInvalidResponse) {
		t.Errorf("typed tool whose output fails its schema: code %q, want INVALID_RESPONSE (%s)", code, mustJSON(res))
	}
}

// TestTypedToolArgsGuardAcceptsSDKRejects: an integer beyond the Go
// field's range passes the guard's validation (the schema says "integer")
// and fails the go-sdk's decoding, whose message echoes the value: the
// caller gets a contract error without it.
func TestTypedToolArgsGuardAcceptsSDKRejects(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "typed", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "count", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, countOut, error) {
			return nil, countOut(in), nil
		})
	cs := installReadTool(t, srv, "count")
	res, err := call(t, cs, "count", json.RawMessage(`{"n":123456789012345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	out := mustJSON(res)
	if strings.Contains(out, "1.2345678901234568e+29") || !strings.Contains(out, `"code":"`) {
		t.Errorf("out-of-range integer for a typed tool: %s, want a contract error that does not echo the value", out)
	}
}

// TestCredentialInUnexportedFieldRedacted: a Credential prints as
// [REDACTED] everywhere, also where fmt cannot call its methods: in an
// unexported field of the caller's struct (type client struct{ cred
// mcpguard.Credential }), which fmt and slog's TextHandler walk instead.
func TestCredentialInUnexportedFieldRedacted(t *testing.T) {
	const secret = "tok-super-secret-123"
	type downstreamClient struct {
		url  string
		cred mcpguard.Credential
	}
	type callState struct {
		id mcpguard.Identity
	}
	c := downstreamClient{url: "https://api.example", cred: mcpguard.NewCredential(secret)}
	st := callState{id: mcpguard.Identity{Principal: &policy.Principal{Subject: "ann"}, Credential: mcpguard.NewCredential(secret)}}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		outs = append(outs, verb+" client: "+fmt.Sprintf(verb, c), verb+" &client: "+fmt.Sprintf(verb, &c), verb+" state: "+fmt.Sprintf(verb, st))
	}
	var sb strings.Builder
	slog.New(slog.NewTextHandler(&sb, nil)).Info("calling downstream", "client", c, "state", st)
	outs = append(outs, "slog text: "+sb.String())
	for _, o := range outs {
		if strings.Contains(o, secret) || strings.Contains(o, fmt.Sprintf("%x", secret)) {
			t.Errorf("credential leaked: %s", o)
		}
	}
}

// TestNumberLiteralBounds: where arguments are checked with the reference
// validator (here for multipleOf, outside the fast path), a number literal
// longer than 128 characters or with an exponent beyond ±400 is refused at
// once: the validator's exact rationals would take seconds on a megabyte
// of digits, and tens of milliseconds per exponent near a million. "At
// once" is judged against the same handler's time for arguments of the
// same size that hold no long literal (the 1.8 MB literal itself takes
// most of a second under -race to decode, past a fixed 1 s bound on a busy
// host; refused only after its exact rational, it took 27 s when tried).
func TestNumberLiteralBounds(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "pay", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number","multipleOf":0.01}}}`)}, (&stub{}).handle)
	if err != nil {
		t.Fatal(err)
	}
	const long = 1800000
	start := time.Now()
	res, err := h(context.Background(), req("pay", `{"n":12.5`+strings.Repeat(" ", long)+`}`))
	base := time.Since(start)
	if got := codeOf(t, res, err); got != "" {
		t.Fatalf("n=12.5 and %d spaces: code %q, want none", long, got)
	}
	for _, tc := range []struct {
		n    string
		want string
	}{
		{"12.5", ""},
		{"1e400", ""}, // at the bound, and a multiple of 0.01
		{"1e-999999", "INVALID_ARGUMENTS"},
		// 1e-999999 is not a multiple of 0.01 either; zero is: the exponent
		// bound alone decides these.
		{"0e-400", ""},
		{"0e-401", "INVALID_ARGUMENTS"},
		{"0e-999999", "INVALID_ARGUMENTS"},
		{"1E+401", "INVALID_ARGUMENTS"},
		{"1" + strings.Repeat("0", 200000) + "e-200000", "INVALID_ARGUMENTS"},
		{"1" + strings.Repeat("0", long), "INVALID_ARGUMENTS"},
	} {
		start := time.Now()
		res, err := h(context.Background(), req("pay", `{"n":`+tc.n+`}`))
		if d := time.Since(start); d > 8*base+500*time.Millisecond {
			t.Errorf("%.20s... (%d bytes) took %v; arguments of %d bytes with no long literal %v", tc.n, len(tc.n), d, long, base)
		}
		if got := codeOf(t, res, err); got != tc.want {
			t.Errorf("n=%.20s...: code %q, want %q", tc.n, got, tc.want)
		}
	}
}

// installReadTool guards srv with a policy in which tool is a read that
// bob may call, and connects a client.
func installReadTool(t *testing.T, srv *mcp.Server, tool string) *mcp.ClientSession {
	t.Helper()
	guardWithPolicy(t, srv, policy.Config{Tools: []policy.ToolRule{{Name: tool, Class: policy.Read}}})
	return connectPlain(t, srv, nil)
}

// guardWithPolicy installs on srv a guard enforcing cfg, with bob as the
// caller.
func guardWithPolicy(t *testing.T, srv *mcp.Server, cfg policy.Config) {
	t.Helper()
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
}

// connectWatchingChanges connects a client on protocol 2025-11-25, which
// hears tools/list_changed, and returns a func that waits for the server's
// next one to the client's session, once the guard has seen it: the guard
// passes it on only when the tools the session's caller may see changed,
// so the wait is on the server's side of the guard.
func connectWatchingChanges(t *testing.T, srv *mcp.Server) (*mcp.ClientSession, func()) {
	t.Helper()
	changed := make(chan struct{}, 16)
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Added after Install: outside the guard's sending middleware.
	srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "notifications/tools/list_changed" && req.GetSession() == ss {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
			return res, err
		}
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "review", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs, func() {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatal("no tools/list_changed notification")
		}
	}
}
