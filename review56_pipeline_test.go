package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r56Case is one combination of failing steps of the pipeline.
type r56Case struct {
	authFail  bool
	tool      string // r56_read, admin_r56 (role refused), r56_off (write off the allowlist), r56_write
	badArgs   bool
	exhausted bool // the caller's rate budget is used up
	auditDown bool
	handler   string // ok, panic, error, nil, timeout, denial
	opts      r56Opts
}

// r56Opts are the guard's settings and the client's protocol for a case.
type r56Opts struct {
	protocolErrors bool
	failClosed     bool // Options.AuditFailClosed
	version        string
	dryRun         bool // Options.DryRun
	// noTimeout leaves Options.Timeout unset (30 ms otherwise): for a test
	// whose handler waits on the test's own timing, which a loaded machine
	// stretches past it.
	noTimeout bool
}

func (c r56Case) String() string {
	return fmt.Sprintf("auth_fail=%v/tool=%s/bad_args=%v/exhausted=%v/audit_down=%v/handler=%s/%+v",
		c.authFail, c.tool, c.badArgs, c.exhausted, c.auditDown, c.handler, c.opts)
}

// want returns the code the first failing step of c reports ("" for none),
// and whether the limiter keeps a charge for the call.
func (c r56Case) want() (code string, charged bool) {
	write := c.tool == "r56_write"
	switch {
	case c.authFail:
		return "UNAUTHENTICATED", false
	case c.tool == "admin_r56":
		return "FORBIDDEN", false
	case c.tool == "r56_off":
		return "WRITE_NOT_ALLOWED", false
	case c.badArgs:
		return "INVALID_ARGUMENTS", false
	case c.exhausted:
		return "RATE_LIMIT_EXCEEDED", false
	case write && c.opts.dryRun && c.auditDown && c.opts.failClosed:
		return "AUDIT_UNAVAILABLE", true // a dry run is refused as a read is
	case write && c.opts.dryRun:
		return "", true // simulated: counted against the rate, the handler not run
	case write && c.auditDown:
		return "AUDIT_UNAVAILABLE", false
	}
	if c.auditDown && c.opts.failClosed && !write && c.handler == "ok" {
		return "AUDIT_UNAVAILABLE", true // the read ran; its outcome went unrecorded
	}
	switch c.handler {
	case "panic", "error", "nil":
		return "INTERNAL", true
	case "timeout":
		return "UPSTREAM_UNAVAILABLE", true
	case "nocode":
		return "INTERNAL", true
	case "denial":
		return "FORBIDDEN", true
	}
	return "", true
}

const r56Secret = "s3cr3t-arg-value"

// r56Env is one guard, with its switches, serving one case.
type r56Env struct {
	authOK  atomic.Bool
	mode    atomic.Value // string
	ran     atomic.Int64
	sink    *memSink
	lim     *limiter.Limiter
	g       *mcpguard.Guard
	srv     *mcp.Server
	cs      *mcp.ClientSession
	signer  *confirm.Signer
	hook    func(context.Context) (*mcp.CallToolResult, error) // handler mode "hook"
	reqHook func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error)
}

var r56Schema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`)

func r56Policy(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "r56_read", Class: policy.Read},
			{Name: "admin_r56", Class: policy.Read},
			{Name: "r56_off", Class: policy.Write},
			{Name: "r56_write", Class: policy.Write},
			{Name: "r56_confirm", Class: policy.Write, Confirm: true},
		},
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"r56_write", "r56_confirm"},
		ShowForbidden:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *r56Env) handler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	e.ran.Add(1)
	switch e.mode.Load().(string) {
	case "panic":
		panic("boom " + r56Secret)
	case "error":
		return nil, errors.New("db password=hunter2 " + r56Secret)
	case "nil":
		return nil, nil
	case "timeout":
		<-ctx.Done()
		return nil, ctx.Err()
	case "denial":
		return nil, mcpguard.Deny(mcpguard.CodeForbidden, "not yours")
	case "nocode":
		return nil, &mcpguard.DenialError{Message: "no " + r56Secret}
	case "hook":
		if e.reqHook != nil {
			return e.reqHook(ctx, req)
		}
		return e.hook(ctx)
	}
	return textResult("ok"), nil
}

// newR56EnvMode builds a server with the four tools guarded by Install
// (mode "install"), tool by tool with Guard.AddTool ("wrap"), or by the
// stand-alone steps in the pipeline's order, without a Guard ("chain"), and
// a client on it.
func newR56EnvMode(t *testing.T, mode string, o r56Opts) *r56Env {
	install := mode == "install"
	t.Helper()
	e := &r56Env{sink: &memSink{}, signer: testSigner(t, nil)}
	e.mode.Store("ok")
	var err error
	e.lim, err = limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	authn := mcpguard.AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
		if !e.authOK.Load() {
			return nil, mcpguard.Deny(mcpguard.CodeUnauthenticated, "no identity")
		}
		return bob, nil
	})
	timeout := 30 * time.Millisecond
	if o.noTimeout {
		timeout = 0
	}
	e.g, err = mcpguard.New(r56Policy(t), authn, &mcpguard.Options{
		Audit:   e.sink,
		Limiter: e.lim,
		Timeout: timeout,

		Confirmer:       e.signer,
		ProtocolErrors:  o.protocolErrors,
		AuditFailClosed: o.failClosed,
		DryRun:          o.dryRun,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = mcp.NewServer(&mcp.Implementation{Name: "r56", Version: "1"}, nil)
	for _, name := range []string{"r56_read", "admin_r56", "r56_off", "r56_write", "r56_confirm"} {
		tool := &mcp.Tool{Name: name, InputSchema: r56Schema}
		if !strings.Contains(name, "write") && !strings.Contains(name, "off") && !strings.Contains(name, "confirm") {
			tool.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
		}
		if mode == "chain" {
			e.srv.AddTool(tool, r56Chain(t, e, authn, tool, o)(e.handler))
		} else if install {
			e.srv.AddTool(tool, e.handler)
		} else if err := e.g.AddTool(e.srv, tool, e.handler); err != nil {
			t.Fatal(err)
		}
	}
	if install {
		if err := e.g.Install(e.srv); err != nil {
			t.Fatal(err)
		}
	}
	e.cs = connectVersion(t, e.srv, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}, o.version)
	return e
}

// r56Outcome is what a client and the audit trail saw of one call.
type r56Outcome struct {
	Code      string
	Retryable bool
	Records   []string // phase/allowed/code/tool/class/dry_run/cost per record
	Ran       int64
	Left      int // calls the caller's rate budget still admits
}

func runR56(t *testing.T, install bool, c r56Case) r56Outcome {
	t.Helper()
	return runR56Mode(t, map[bool]string{false: "wrap", true: "install"}[install], c)
}

func runR56Mode(t *testing.T, mode string, c r56Case) r56Outcome {
	t.Helper()
	e := newR56EnvMode(t, mode, c.opts)
	e.authOK.Store(!c.authFail)
	e.mode.Store(c.handler)
	e.sink.fail.Store(c.auditDown)
	if c.exhausted {
		d := e.lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "bob", Calls: 2})
		if !d.Allowed {
			t.Fatalf("pre-exhausting: %+v", d)
		}
		e.lim.Release(d)
	}
	args := map[string]any{"text": r56Secret}
	if c.badArgs {
		args = map[string]any{"text": 5, "extra": r56Secret}
	}
	res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: args})
	var out r56Outcome
	switch {
	case err != nil:
		if strings.Contains(err.Error(), r56Secret) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%v: error leaks: %v", c, err)
		}
		if strings.Contains(err.Error(), "unknown tool") {
			out.Code = "TOOL_NOT_FOUND"
		} else if d, ok := mcpguard.DenialOf(nil, err); ok {
			out.Code, out.Retryable = string(d.Code), d.Code.Retryable() && d.RetryAfter >= 0
			if d.CorrelationID == "" {
				t.Errorf("%v: protocol error without correlation id: %v", c, err)
			}
			if we := wireError(err); we == nil || we.Code != d.Code.JSONRPC() {
				t.Errorf("%v: JSON-RPC error %v, want code %d", c, err, d.Code.JSONRPC())
			}
		} else if c.opts.protocolErrors && strings.Contains(err.Error(), "the tool timed out") {
			out.Code = "UPSTREAM_UNAVAILABLE" // -32003: go-sdk v1.8.0 drops its data
			out.Retryable = c.tool == "r56_read"
		} else {
			out.Code = "error: " + err.Error()
		}
	case res.IsError:
		raw, _ := json.Marshal(res)
		if strings.Contains(string(raw), r56Secret) || strings.Contains(string(raw), "hunter2") || strings.Contains(string(raw), "goroutine") {
			t.Errorf("%v: result leaks: %s", c, raw)
		}
		d, ok := mcpguard.DenialOf(res, nil)
		if !ok {
			t.Fatalf("%v: tool error without a denial: %s", c, raw)
		}
		out.Code, out.Retryable = string(d.Code), d.Code.Retryable() && d.RetryAfter >= 0
		if d.CorrelationID == "" && mode != "chain" { // a Recover outside Audit does not see it
			t.Errorf("%v: denial without correlation id: %s", c, raw)
		}
		var body struct {
			Error map[string]any `json:"error"`
		}
		sc, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(sc, &body); err != nil {
			t.Errorf("%v: structured content %s: %v", c, sc, err)
		}
		for _, k := range []string{"code", "message", "retryable"} {
			if _, ok := body.Error[k]; !ok {
				t.Errorf("%v: error body without %q: %s", c, k, sc)
			}
		}
	}
	if err := e.g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ev := range e.sink.all() {
		out.Records = append(out.Records, fmt.Sprintf("%s allowed=%v code=%s tool=%s class=%s dry=%v cost=%v subject=%s",
			ev.Phase, ev.Allowed, ev.Code, ev.Tool, ev.Class, ev.DryRun, ev.Cost, ev.Subject))
		if strings.Contains(ev.Detail, r56Secret) || strings.Contains(ev.Detail, "hunter2") {
			t.Errorf("%v: record detail leaks: %q", c, ev.Detail)
		}
		if len(ev.Args) > 0 {
			t.Errorf("%v: record carries arguments: %v", c, ev.Args)
		}
	}
	out.Ran = e.ran.Load()
	for range 3 {
		d := e.lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "bob", Calls: 1})
		if d.Allowed {
			out.Left++
			e.lim.Release(d)
		}
	}
	return out
}

func r56Cases() []r56Case {
	var cs []r56Case
	for _, authFail := range []bool{false, true} {
		for _, tool := range []string{"r56_read", "admin_r56", "r56_off", "r56_write"} {
			for _, badArgs := range []bool{false, true} {
				for _, exhausted := range []bool{false, true} {
					for _, auditDown := range []bool{false, true} {
						for _, h := range []string{"ok", "panic", "error", "nil", "timeout", "denial", "nocode"} {
							c := r56Case{authFail, tool, badArgs, exhausted, auditDown, h, r56Opts{}}
							// What the handler does matters only once it
							// is called; "panic" checks that it is not.
							if h != "ok" && h != "panic" && (c.authFail || c.badArgs || c.exhausted || c.tool == "admin_r56" || c.tool == "r56_off") {
								continue
							}
							cs = append(cs, c)
						}
					}
				}
			}
		}
	}
	return cs
}

// TestReview56PipelineOrderEveryCombination checks, for every combination
// of failing steps, that the code reported is the first failing step's,
// that the limiter keeps a charge only for a call whose handler ran, that
// the audit trail has one outcome record (and an intent for a write that
// got that far) with the call's decision, and that Install and Wrap decide
// alike.
func TestReview56PipelineOrderEveryCombination(t *testing.T) {
	for _, c := range r56Cases() {
		wantCode, charged := c.want()
		wrap := runR56(t, false, c)
		inst := runR56(t, true, c)
		wantRetry := wantCode == "RATE_LIMIT_EXCEEDED" || wantCode == "AUDIT_UNAVAILABLE" ||
			wantCode == "UPSTREAM_UNAVAILABLE" && c.tool == "r56_read"
		if wrap.Retryable != wantRetry {
			t.Errorf("%v: retryable %v, want %v", c, wrap.Retryable, wantRetry)
		}
		if wrap.Code != wantCode {
			t.Errorf("%v: Wrap code %q, want %q", c, wrap.Code, wantCode)
		}
		if fmt.Sprint(wrap) != fmt.Sprint(inst) {
			t.Errorf("%v: Wrap and Install differ:\nwrap    %+v\ninstall %+v", c, wrap, inst)
		}
		wantLeft := 2
		if c.exhausted {
			wantLeft = 0
		}
		if charged && wantCode != "RATE_LIMIT_EXCEEDED" {
			wantLeft--
		}
		if wrap.Left != wantLeft {
			t.Errorf("%v: rate budget left %d, want %d", c, wrap.Left, wantLeft)
		}
		wantRan := int64(0)
		if charged {
			wantRan = 1
		}
		if wrap.Ran != wantRan {
			t.Errorf("%v: handler ran %d times, want %d", c, wrap.Ran, wantRan)
		}
		if c.auditDown {
			if len(wrap.Records) != 0 {
				t.Errorf("%v: records with the sink down: %v", c, wrap.Records)
			}
			continue
		}
		wantRecs := 1
		if c.tool == "r56_write" && !c.authFail && !c.badArgs && !c.exhausted {
			wantRecs = 2
		}
		if len(wrap.Records) != wantRecs {
			t.Errorf("%v: %d records, want %d: %v", c, len(wrap.Records), wantRecs, wrap.Records)
			continue
		}
		last := wrap.Records[len(wrap.Records)-1]
		wantLast := fmt.Sprintf("outcome allowed=%v code=%s", wantCode == "", wantCode)
		if !strings.HasPrefix(last, wantLast) {
			t.Errorf("%v: outcome record %q, want prefix %q", c, last, wantLast)
		}
	}
}

// r56Chain is the pipeline of e's guard made of the stand-alone steps.
func r56Chain(t *testing.T, e *r56Env, authn mcpguard.Authenticator, tool *mcp.Tool, o r56Opts) mcpguard.Middleware {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts := &mcpguard.Options{Logger: log, DryRun: o.dryRun, Limiter: e.lim}
	p := r56Policy(t)
	auditStep, err := mcpguard.Audit(e.sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	v, err := mcpguard.NewValidator(tool.InputSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	limitStep, err := mcpguard.Limit(e.lim, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	writeAhead, err := mcpguard.WriteAhead(e.sink, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	confirmStep, err := mcpguard.Confirm(e.signer, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	dryRunStep, err := mcpguard.DryRun(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return mcpguard.Chain(mcpguard.Recover(log), auditStep, mcpguard.Authenticate(authn),
		mcpguard.Authorize(p), mcpguard.ValidateArguments(v), confirmStep, limitStep, dryRunStep, writeAhead)
}

// TestReview56ChainMatchesGuard checks that the stand-alone steps chained
// in the pipeline's order refuse, charge and record each combination of
// failing steps as the Guard does ("a chain whose records and refusals
// are the Guard's").
func TestReview56ChainMatchesGuard(t *testing.T) {
	for _, o := range []r56Opts{{}, {dryRun: true, version: "2025-11-25"}} {
		for _, c := range r56Cases() {
			if c.handler == "timeout" {
				continue // a chain has no deadline of its own
			}
			if o.dryRun && c.badArgs {
				continue // documented: recorded dry_run false (see Audit)
			}
			c.opts = o
			wrap := runR56Mode(t, "wrap", c)
			chain := runR56Mode(t, "chain", c)
			if fmt.Sprint(wrap) != fmt.Sprint(chain) {
				t.Errorf("%v: Guard and chain differ:\nguard %+v\nchain %+v", c, wrap, chain)
			}
		}
	}
}

// TestReview56PipelineOrderOptions is TestReview56PipelineOrderEveryCombination
// under protocol errors, AuditFailClosed and the older protocol.
func TestReview56PipelineOrderOptions(t *testing.T) {
	for _, o := range []r56Opts{
		{protocolErrors: true, failClosed: true, version: "2025-11-25"},
		{failClosed: true},
		{dryRun: true, failClosed: true, protocolErrors: true},
	} {
		for _, c := range r56Cases() {
			if c.exhausted && c.badArgs || c.authFail && c.tool != "r56_write" {
				continue // covered without options; keeps the run short
			}
			c.opts = o
			wantCode, _ := c.want()
			wrap := runR56(t, false, c)
			inst := runR56(t, true, c)
			if wrap.Code != wantCode {
				t.Errorf("%v: Wrap code %q, want %q", c, wrap.Code, wantCode)
			}
			if fmt.Sprint(wrap) != fmt.Sprint(inst) {
				t.Errorf("%v: Wrap and Install differ:\nwrap    %+v\ninstall %+v", c, wrap, inst)
			}
		}
	}
}

// TestReview56ConfirmCombinations runs the combinations of failing steps
// for a tool that needs confirmation (the client accepts), on both protocol
// generations, and checks that Install, Wrap and the chain of stand-alone
// steps answer, charge and record them alike.
func TestReview56ConfirmCombinations(t *testing.T) {
	for _, o := range []r56Opts{{}, {version: "2025-11-25"}, {dryRun: true}} {
		for _, c := range r56Cases() {
			if c.tool != "r56_write" || c.handler == "timeout" {
				continue
			}
			if o.dryRun && c.badArgs {
				continue // documented: the chain records dry_run false
			}
			c.tool, c.opts = "r56_confirm", o
			wrap := runR56Mode(t, "wrap", c)
			inst := runR56Mode(t, "install", c)
			chain := runR56Mode(t, "chain", c)
			if fmt.Sprint(wrap) != fmt.Sprint(inst) {
				t.Errorf("%v: Wrap and Install differ:\nwrap    %+v\ninstall %+v", c, wrap, inst)
			}
			if fmt.Sprint(wrap) != fmt.Sprint(chain) {
				t.Errorf("%v: Guard and chain differ:\nguard %+v\nchain %+v", c, wrap, chain)
			}
		}
	}
}
