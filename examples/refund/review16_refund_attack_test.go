package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// adminSpellings are names a caller or a model might try for the HTTP
// mode's admin tools: other cases, blanks, control, zero-width and
// look-alike characters, other separators, prefixes.
var adminSpellings = []string{
	"ADMIN_RESET_KEY", "Admin_Reset_Key", "admin_reset_KEY", " admin_reset_key", "admin_reset_key ",
	"admin_reset_key\n", "admin_reset_key\t", "admin_reset_key\u0000", "admin_reset\u200bkey",
	"\u200badmin_reset_key", "\u0430dmin_reset_key", "\uff41dmin_reset_key", "admin-reset-key",
	"adminresetkey", "admin_reset_keys", "admin_reset_key/", "tools/admin_reset_key",
	"refund.admin_reset_key", "admin_reset_key\u0301", "ADMIN_LIST_AUDIT_LOG", "admin_list_audit_log ",
	"admin_%72eset_key", "admin\\u005freset_key",
}

// TestReview16AdminToolsUnderAnySpelling: over stdio the admin tools do
// not exist under any spelling, their own included, and every try is the
// seed's -32601 with an audit record; over HTTP, where they exist, only
// their exact names reach them: any other spelling is -32601 and rotates
// no key (the gateway in front decides by the exact name, so the server
// behind it must not take another one for it).
func TestReview16AdminToolsUnderAnySpelling(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
		cs, _ := connect(t, "", []string{"-audit", auditPath}, alice)
		names := append([]string{"admin_reset_key", "admin_list_audit_log"}, adminSpellings...)
		for _, name := range names {
			got, we := call(t, cs, name, map[string]any{"key_id": "KEY-PRIMARY"})
			if we == nil || we.Code != -32601 {
				t.Errorf("tools/call %q over stdio: %v %v, want -32601", name, got, we)
			}
		}
		cs.Close()
		var n int
		for _, e := range readAudit(t, auditPath, audit.Filter{}) {
			if e.Code == "TOOL_NOT_FOUND" {
				n++
			}
		}
		if n != len(names) {
			t.Errorf("audit: %d TOOL_NOT_FOUND records, want %d", n, len(names))
		}
	})
	t.Run("http", func(t *testing.T) {
		base := startHTTP(t)
		for i, name := range adminSpellings {
			b, _ := json.Marshal(name)
			_, r := post(t, base, `{"jsonrpc":"2.0","id":`+strings.Repeat("1", i+1)+`,"method":"tools/call","params":{"name":`+string(b)+`,"arguments":{"key_id":"KEY-PRIMARY"}}}`, nil)
			if r.Error == nil || r.Error.Code != -32601 {
				t.Errorf("tools/call %q over HTTP: %s %+v, want -32601", name, r.Result, r.Error)
			}
		}
		_, r := post(t, base, `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"admin_reset_key","arguments":{"key_id":"KEY-PRIMARY"}}}`, nil)
		if r.Error != nil || !strings.Contains(string(r.Result), `"rotation":1`) {
			t.Errorf("admin_reset_key after the other spellings: %s %+v, want the first rotation", r.Result, r.Error)
		}
	})
}

// TestReview16IdempotencyKeyIsNoArgument: the server has no idempotency
// keys; an idempotency_key (or any other extra field a model adds) is
// refused as unknown, -32602, and refunds nothing; a retried refund is a
// second refund, as the tool's idempotentHint false tells clients.
func TestReview16IdempotencyKeyIsNoArgument(t *testing.T) {
	cs, _ := connect(t, "", nil, alice)
	for _, extra := range []string{"idempotency_key", "idempotencyKey", "Idempotency-Key", "request_id", "dry_run", "confirm", "approved"} {
		args := map[string]any{"customer_id": "CUST-00001", "amount": 10, "reason": "retry with a key", extra: "k-1"}
		if got, we := call(t, cs, "trigger_refund", args); we == nil || we.Code != -32602 || !strings.Contains(we.Message, extra) {
			t.Errorf("trigger_refund with %s: %v %v, want -32602 naming it", extra, got, we)
		}
	}
	if refunded, _ := refundedTotal(t, cs, "CUST-00001"); refunded != 0.0 {
		t.Errorf("refunded_total %v after refused calls, want 0", refunded)
	}
	var ann map[string]any
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "trigger_refund" {
			ann = toMap(t, tool.Annotations)
		}
	}
	if ann["idempotentHint"] != false || ann["readOnlyHint"] != false {
		t.Errorf("trigger_refund annotations %v, want idempotentHint and readOnlyHint false", ann)
	}
}

// TestReview16HostileAmounts: amounts as a model might write them, sent as
// raw JSON literals. Only whole cents in (0, 1000000] pass validation;
// the largest passes it and is refused by the paid total; nothing is
// refunded by any of them.
func TestReview16HostileAmounts(t *testing.T) {
	s := startRaw(t, nil, alice)
	s.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, true)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, false)
	for i, amount := range []string{
		"0.30000000000000004", "1e-9", "-0", "-0.0", "0e5", "-1", "0.001", "1000000.01", "1e6000",
		`"10.0"`, `"NaN"`, `"Infinity"`, `"1e3"`, "null", "true", "[10]", `{"value":10}`,
	} {
		r := s.send(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(100+i)+`,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":`+amount+`,"reason":"hostile amount literal"}}}`, true)
		if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, `"amount"`) {
			t.Errorf("amount %s: %s %+v, want -32602 naming amount", amount, r.Result, r.Error)
		}
	}
	r := s.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":1e6,"reason":"largest valid amount"}}}`, true)
	if r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), `\"status\":\"refused\"`) {
		t.Errorf("amount 1e6: %s %+v, want refused (more than CUST-00001 paid)", r.Result, r.Error)
	}
	r = s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}}}`, true)
	if !strings.Contains(string(r.Result), `\"refunded_total\":0`) {
		t.Errorf("after the hostile amounts: %s, want refunded_total 0", r.Result)
	}
}
