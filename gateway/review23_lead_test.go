package gateway

import (
	"net/http"
	"strings"
	"testing"

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
