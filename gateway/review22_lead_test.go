package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview22NULKeys: a member name that holds a NUL reads, to a reader
// that cuts names at the NUL (C's cJSON and others built on C strings),
// as the name before it. {"name\u0000":"admin_reset_key","name":"..."}
// is then a tool name given twice, the first winning there, and
// {"amount\u0000":1e9,"amount":1} an amount of 1e9 where the gateway read
// 1. Such names are refused (the envelope's, params', and the arguments'
// for an argument limit), never forwarded.
func TestReview22NULKeys(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}}}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, &Options{Policy: pol})
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name\u0000":"admin_reset_key","name":"get_customer_record","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name\u0000x":"admin_reset_key","name":"get_customer_record","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME\u0000":"admin_reset_key","name":"get_customer_record","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method\u0000":"tools/call","method":"tools/list","params":{"name":"admin_reset_key"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"amount\u0000":1e9,"amount":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"Amount\u0000z":1e9,"amount":1}}}`,
	} {
		received := len(rg.down.log())
		got := rg.post(t, viewer, body)
		if got.status == http.StatusOK || len(rg.down.log()) != received {
			t.Errorf("%s: status %d, downstream received %d; want refused, nothing forwarded", body, got.status, len(rg.down.log())-received)
		}
	}
	// A NUL in an argument's value, or in a name that is no envelope key
	// and no limited argument, is the tool's business.
	for _, body := range []string{
		call(`2`, "trigger_refund", `{"amount":1,"note":"a\u0000b"}`),
		call(`3`, "get_customer_record", `{"x\u0000":1}`),
	} {
		if got := rg.post(t, viewer, body); got.status != http.StatusOK {
			t.Errorf("%s: status %d %s, want 200", body, got.status, got.body)
		}
	}
}

// TestReview22NULKeysInAnswers: an answer whose result (or tools) is named
// a second time with a NUL after the name reads, to a client that cuts
// names at a NUL and takes the first (cJSON), as that first member, which
// the filter never judged. Such an answer is not relayed as it is.
func TestReview22NULKeysInAnswers(t *testing.T) {
	hidden := `{"name":"admin_reset_key","inputSchema":{"type":"object"}}`
	shown := `{"name":"get_customer_record","inputSchema":{"type":"object"}}`
	for _, answer := range []string{
		`{"jsonrpc":"2.0","id":1,"result\u0000":{"tools":[` + hidden + `]},"result":{"tools":[` + shown + `]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools\u0000x":[` + hidden + `],"tools":[` + shown + `]}}`,
	} {
		down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(answer))
		}))
		g, err := New(down.URL+"/mcp", DemoTokens(), &Options{FilterToolsList: true, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		rg := &rig{url: newServer(t, g).URL}
		got := rg.post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if strings.Contains(got.body, "admin_reset_key") {
			t.Errorf("answer %s: relayed to the viewer as %d %s", answer, got.status, got.body)
		}
	}
}
