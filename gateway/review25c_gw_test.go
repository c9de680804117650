package gateway

import (
	"net/http"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview25cArgNamesDelimiters: arguments naming a limited field and
// another spelling of it that differs by '_' or '-' ("a_mount", "max-amount"
// for "max_amount") are unreadable, as a case variant is: encoding/json/v2's
// case-insensitive matching (MatchCaseInsensitiveNames, a `case:ignore` tag)
// ignores '_' and '-', and with jsontext.AllowDuplicateNames(true) takes the
// last of the two, so a handler read 1000000 where the limit read 5. Names
// that stay apart once '_' and '-' are dropped still pass.
func TestReview25cArgNamesDelimiters(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}, {Field: "max_amount", Max: 100}}}}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, &Options{Policy: pol})
	for _, tc := range []struct {
		args   string
		status int
	}{
		{`{"amount":5,"max_amount":5,"a_mount":1000000}`, http.StatusForbidden},
		{`{"amount":5,"max_amount":5,"-amount-":1000000}`, http.StatusForbidden},
		{`{"amount":5,"max_amount":5,"A_MOUNT":1000000}`, http.StatusForbidden},
		{`{"amount":5,"max_amount":5,"a\u005fmount":1000000}`, http.StatusForbidden},
		{`{"amount":5,"max_amount":5,"maxAmount":1000000}`, http.StatusForbidden},
		{`{"amount":5,"max_amount":5,"max-amount":1000000}`, http.StatusForbidden},
		{`{"amount":5,"max_amount":5,"max__amount\u0000x":1000000}`, http.StatusForbidden},
		{`{"amount":5,"max_amount":5,"amounts":1000000,"max_amount_":null}`, http.StatusForbidden},
		{`{"amount":5,"max_amount":5,"amounts":1000000,"_":1,"note":"a_mount"}`, http.StatusOK},
		{`{"amount":5,"max_amount":5}`, http.StatusOK},
	} {
		before := len(rg.down.log())
		got := rg.post(t, viewer, call(`1`, "trigger_refund", tc.args))
		if got.status != tc.status {
			t.Errorf("arguments %s: status %d, want %d: %s", tc.args, got.status, tc.status, got.body)
		}
		if reached := len(rg.down.log()) > before; reached != (tc.status == http.StatusOK) {
			t.Errorf("arguments %s: reached the downstream: %v", tc.args, reached)
		}
	}
}

// TestReview25cRawArgsFold: newRawArgs reads no field once two names are
// equal under Unicode case folding with '_' and '-' dropped, each cut at
// a NUL; names that differ otherwise leave the fields readable.
func TestReview25cRawArgsFold(t *testing.T) {
	for _, tc := range []struct {
		args   string
		broken bool
	}{
		{`{"amount":1,"a_mount":2}`, true},
		{`{"amount":1,"AMOUNT":2}`, true},
		{`{"amount":1,"am-ount\u0000":2}`, true},
		{`{"amount":1,"\u017f_amount":2,"samount":3}`, true}, // ſ folds onto s
		{`{"amount":1,"":2,"_":3}`, true},
		{`{"amount":1,"amounts":2,"a.mount":3,"a mount":4}`, false},
		{`{"amount":1}`, false},
	} {
		a := newRawArgs([]byte(tc.args))
		if a.broken != tc.broken {
			t.Errorf("%s: broken = %v, want %v", tc.args, a.broken, tc.broken)
		}
		if _, ok := a.Number("amount"); ok == tc.broken {
			t.Errorf("%s: amount readable = %v, want %v", tc.args, ok, !tc.broken)
		}
	}
}

// TestReview25cSpecMembersPass: the members MCP puts beside the known ones
// (params' _meta with a progressToken, task; a tool call's arguments named
// like known members with '_' or '-') drop to no known name and are
// forwarded, not refused as ambiguous.
func TestReview25cSpecMembersPass(t *testing.T) {
	rg := newRig(t, nil)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"id":"c1","_id":"x","name_":"y","arguments_schema":{}},"_meta":{"progressToken":"p1"},"task":{"ttl":60000}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"c","_meta":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1,"_meta":{}}}`,
	} {
		before := len(rg.down.log())
		got := rg.post(t, viewer, body)
		if got.status >= 300 || len(rg.down.log()) == before {
			t.Errorf("%s: status %d, forwarded %v: %s", body, got.status, len(rg.down.log()) > before, got.body)
		}
	}
}
