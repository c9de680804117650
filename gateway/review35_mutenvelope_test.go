package gateway

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestErrorMemberMarksAResponse pins that the envelope reads an "error"
// member as it reads "result": a client's error answer to a server's
// request (an elicitation it declines) is a response and is forwarded as
// sent, while a request that carries an "error" member, or a message
// with both members, is refused as malformed and never forwarded.
func TestErrorMemberMarksAResponse(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int // 202: forwarded as sent
		id         string
	}{
		{name: "error_answer", body: `{"jsonrpc":"2.0","id":"srv-1","error":{"code":-1,"message":"declined"}}`,
			status: http.StatusAccepted},
		{name: "error_answer_null_id", body: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
			status: http.StatusAccepted},
		{name: "request_with_error", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","error":{"code":1,"message":"x"}}`,
			status: http.StatusBadRequest, id: "1"},
		{name: "call_with_error", body: `{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"},"method":"tools/call","params":{"name":"get_customer_record"}}`,
			status: http.StatusBadRequest, id: "2"},
		{name: "result_and_error", body: `{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"x"}}`,
			status: http.StatusBadRequest, id: "3"},
		{name: "error_without_id", body: `{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}`,
			status: http.StatusBadRequest, id: "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t, nil)
			got := rg.post(t, viewer, tc.body)
			if got.status != tc.status {
				t.Fatalf("status %d (%s), want %d", got.status, got.body, tc.status)
			}
			fwd := rg.down.bodies()
			if tc.status == http.StatusAccepted {
				if len(fwd) != 1 || fwd[0] != tc.body {
					t.Errorf("the downstream received %q, want the answer as sent", fwd)
				}
				return
			}
			if id, code, _ := rpcErr(t, got.body); code != CodeInvalidRequest || string(id) != tc.id {
				t.Errorf("answer %s: want code %d, id %s", got.body, CodeInvalidRequest, tc.id)
			}
			if len(fwd) != 0 {
				t.Errorf("a malformed message reached the downstream: %q", fwd)
			}
		})
	}
}

// TestToolNameCharacters pins what the envelope accepts in a tools/call's
// params.name and what a client is told when it refuses one. A space
// inside a name is an ordinary character: the call is judged and forwarded
// as sent. A C0 control character, DEL, and U+FFFD (which is also what the
// gateway reads for an escaped lone surrogate, where a downstream in
// JavaScript or Python keeps the surrogate) are refused as control
// characters; white space at an end and invisible characters are refused
// for what a trimming or lenient downstream would make of them. Each
// refusal is -32602 with its own message, and nothing is forwarded.
func TestToolNameCharacters(t *testing.T) {
	const (
		control   = "Invalid params: params.name contains a control character"
		invisible = "Invalid params: params.name has white space at an end or an invisible character"
	)
	for _, tc := range []struct {
		name, tool string // tool: params.name as written in the JSON body
		message    string // "": forwarded
	}{
		{name: "inner_space", tool: `get customer record`},
		{name: "inner_spaces", tool: `a b  c`},
		{name: "soh", tool: `get\u0001x`, message: control},
		{name: "unit_separator", tool: `get\u001fx`, message: control},
		{name: "tab", tool: `get\tx`, message: control},
		{name: "del", tool: `get\u007fx`, message: control},
		{name: "replacement_char", tool: `get\ufffdx`, message: control},
		{name: "lone_surrogate", tool: `get\ud800x`, message: control},
		{name: "trailing_space", tool: `get_customer_record `, message: invisible},
		{name: "leading_space", tool: ` get_customer_record`, message: invisible},
		{name: "zero_width_space", tool: `get\u200bx`, message: invisible},
		{name: "c1_next_line", tool: `get\u0085x`, message: invisible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t, nil)
			body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tc.tool + `","arguments":{}}}`
			got := rg.post(t, viewer, body)
			fwd := rg.down.bodies()
			if tc.message == "" {
				if got.status != http.StatusOK || len(fwd) != 1 || fwd[0] != body {
					t.Fatalf("status %d (%s), forwarded %q; want 200 and the call forwarded as sent", got.status, got.body, fwd)
				}
				return
			}
			if got.status != http.StatusBadRequest || len(fwd) != 0 {
				t.Fatalf("status %d (%s), forwarded %q; want 400 and nothing forwarded", got.status, got.body, fwd)
			}
			var answer struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(got.body), &answer); err != nil {
				t.Fatalf("answer %q: %v", got.body, err)
			}
			if string(answer.ID) != "7" || answer.Error.Code != CodeInvalidParams || answer.Error.Message != tc.message {
				t.Errorf("answer %s: want id 7, code %d, message %q", got.body, CodeInvalidParams, tc.message)
			}
		})
	}
}
