package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview23CostAmbiguousArgs: with Options.Cost, a call whose
// arguments name a field twice, or twice under case folding or up to a
// NUL, is refused (-32602, 400) and not forwarded: the gateway reads such
// arguments as absent, so a Cost priced by an argument charged the
// default while a downstream reading the last spelling (encoding/json
// into a struct matches "AMOUNT" to amount) refunded 1000.
func TestReview23CostAmbiguousArgs(t *testing.T) {
	var priced []float64
	rg := newRig(t, &Options{Cost: func(_ string, a policy.Args) float64 {
		v, ok := a.Number("amount")
		if !ok {
			v = 1
		}
		priced = append(priced, v)
		return v
	}})
	for _, args := range []string{
		`{"amount":1,"amount":1000}`,
		`{"amount":1,"AMOUNT":1000}`,
		`{"amount":1,"amount\u0000":1000}`,
	} {
		got := rg.post(t, viewer, call(`7`, "get_customer_record", args))
		if got.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", args, got.status, got.body)
		}
		if _, code, data := rpcErr(t, got.body); code != CodeInvalidParams || data["code"] != "INVALID_ARGUMENTS" {
			t.Errorf("%s: error %d %v, want -32602 INVALID_ARGUMENTS: %s", args, code, data["code"], got.body)
		}
	}
	if n := len(rg.down.log()); n != 0 {
		t.Errorf("%d requests forwarded, want 0", n)
	}
	if len(priced) != 0 {
		t.Errorf("Cost priced %v, want no call", priced)
	}
	// Arguments named once each are priced and forwarded.
	got := rg.post(t, viewer, call(`8`, "get_customer_record", `{"amount":3,"Note":"x"}`))
	if got.status != http.StatusOK || len(rg.down.log()) != 1 || len(priced) != 1 || priced[0] != 3 {
		t.Errorf("a plain call: status %d, %d forwarded, priced %v: %s", got.status, len(rg.down.log()), priced, got.body)
	}
	if !strings.Contains(rg.logs.String(), "get_customer_record") {
		t.Errorf("no log line names the tool:\n%s", rg.logs)
	}
}

// TestReview23PathsBeginWithSlash: a Path or HealthPath without its
// leading "/" is refused by New; it was taken, and every request to the
// gateway was answered 404 (no request's path is "mcp").
func TestReview23PathsBeginWithSlash(t *testing.T) {
	for _, o := range []Options{{Path: "mcp"}, {HealthPath: "healthz"}, {Path: "mcp", HealthPath: "-"}} {
		if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &o); err == nil || !strings.Contains(err.Error(), "begin with /") {
			t.Errorf("New with Path %q, HealthPath %q: err %v, want one saying it must begin with /", o.Path, o.HealthPath, err)
		}
	}
	for _, o := range []Options{{}, {Path: "/x", HealthPath: "-"}, {Path: "/", HealthPath: "/h"}} {
		if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &o); err != nil {
			t.Errorf("New with Path %q, HealthPath %q: %v", o.Path, o.HealthPath, err)
		}
	}
}

// panicSink is an audit sink whose every write panics.
type panicSink struct{}

func (panicSink) Write(context.Context, *audit.Event) error { panic("review23: the sink's bug") }
func (panicSink) Close() error                              { return nil }

// TestReview23SinkPanicReleases: a panic of the audit sink is its write
// failing, logged: the call's in-flight place is given back (a cap of one
// admits the next call), a batch of calls does not end the process (its
// members are decided on goroutines of their own), and a write whose
// intent cannot be recorded is refused, not forwarded.
func TestReview23SinkPanicReleases(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "pay", Class: policy.Write}}
	cfg.WriteAllowlist = []string{"pay"}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, &Options{Audit: panicSink{}, Limiter: lim, Policy: pol})
	for i := range 3 {
		if got := rg.post(t, viewer, call(strconv.Itoa(i), "get_customer_record", `{}`)); got.status != http.StatusOK {
			t.Fatalf("call %d: status %d, want 200 (its place given back): %s", i, got.status, got.body)
		}
	}
	got := rg.post(t, viewer, `[`+call(`1`, "get_customer_record", `{}`)+`,`+call(`2`, "get_customer_record", `{}`)+`]`)
	if got.status != http.StatusOK || strings.Count(got.body, `"id"`) != 2 {
		t.Errorf("batch: status %d: %s", got.status, got.body)
	}
	forwarded := len(rg.down.log())
	got = rg.post(t, viewer, call(`9`, "pay", `{}`))
	if _, code, data := rpcErr(t, got.body); code != CodeInternal || data["code"] != "AUDIT_UNAVAILABLE" {
		t.Errorf("a write without its intent record: %d %v, want -32603 AUDIT_UNAVAILABLE: %s", code, data["code"], got.body)
	}
	if n := len(rg.down.log()); n != forwarded {
		t.Errorf("the write was forwarded (%d requests, %d before)", n, forwarded)
	}
	if got := rg.post(t, viewer, call(`10`, "get_customer_record", `{}`)); got.status != http.StatusOK {
		t.Errorf("a call after them: status %d, want 200: %s", got.status, got.body)
	}
	if !strings.Contains(rg.logs.String(), "panicked") {
		t.Errorf("the log does not say the sink panicked:\n%s", rg.logs)
	}
}
