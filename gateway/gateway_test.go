package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

func TestAuthenticationFailures(t *testing.T) {
	rg := newRig(t, nil)
	body := call(`7`, "get_customer_record", "")
	tests := []struct {
		name, auth   string
		extra        []string
		invalidToken bool
	}{
		{name: "missing_header"},
		{name: "wrong_scheme", auth: "Basic dmlld2VyOng="}, // another method: no error code (RFC 6750, 3.1)
		{name: "scheme_only", auth: "Bearer", invalidToken: true},
		{name: "empty_token", auth: "Bearer ", invalidToken: true},
		{name: "unknown_token", auth: "Bearer nope", invalidToken: true},
		{name: "token_case_matters", auth: "Bearer VIEWER-TOKEN", invalidToken: true},
		{name: "prefix_of_token", auth: "Bearer viewer-tok", invalidToken: true},
		{name: "token_with_space", auth: "Bearer viewer token", invalidToken: true},
		{name: "not_token68", auth: "Bearer viewer-token!", invalidToken: true},
		{name: "two_headers", auth: viewer, extra: []string{"Authorization", admin}, invalidToken: true},
		{name: "token_in_query_ignored", auth: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rg.post(t, tt.auth, body, tt.extra...)
			if got.status != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401; body %s", got.status, got.body)
			}
			wa := got.header.Get("WWW-Authenticate")
			if !strings.HasPrefix(wa, "Bearer ") || strings.Contains(wa, "invalid_token") != tt.invalidToken {
				t.Errorf("WWW-Authenticate = %q, invalid_token expected %v", wa, tt.invalidToken)
			}
			id, code, _ := rpcErr(t, got.body)
			if code != CodeUnauthenticated || string(id) != "7" {
				t.Errorf("code, id = %d, %s; want -32000, 7", code, id)
			}
			if strings.Contains(got.body, "token") && strings.Contains(got.body, "viewer-tok") {
				t.Errorf("response echoes the token: %s", got.body)
			}
		})
	}
	if log := rg.down.log(); len(log) != 0 {
		t.Fatalf("unauthenticated requests reached the downstream: %v", log)
	}
	// The scheme is case-insensitive.
	if got := rg.post(t, "bEaReR viewer-token", body); got.status != http.StatusOK {
		t.Fatalf("mixed-case scheme: status %d, body %s", got.status, got.body)
	}
}

func TestMalformedEnvelopes(t *testing.T) {
	rg := newRig(t, nil)
	tests := []struct {
		name, body string
		code       int
		id         string
	}{
		{name: "not_json", body: `{"jsonrpc":`, code: CodeParseError, id: "null"},
		{name: "invalid_utf8", body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"admin_\xff\"}}", code: CodeParseError, id: "null"},
		{name: "number", body: `3`, code: CodeInvalidRequest, id: "null"},
		{name: "string", body: `"tools/call"`, code: CodeInvalidRequest, id: "null"},
		{name: "null", body: `null`, code: CodeInvalidRequest, id: "null"},
		{name: "empty_batch", body: `[]`, code: CodeInvalidRequest, id: "null"},
		{name: "missing_jsonrpc", body: `{"id":1,"method":"tools/list"}`, code: CodeInvalidRequest, id: "1"},
		{name: "wrong_jsonrpc", body: `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, code: CodeInvalidRequest, id: "1"},
		{name: "numeric_jsonrpc", body: `{"jsonrpc":2.0,"id":1,"method":"tools/list"}`, code: CodeInvalidRequest, id: "1"},
		{name: "non_string_method", body: `{"jsonrpc":"2.0","id":1,"method":5}`, code: CodeInvalidRequest, id: "1"},
		{name: "object_id", body: `{"jsonrpc":"2.0","id":{},"method":"tools/list"}`, code: CodeInvalidRequest, id: "null"},
		{name: "bool_id", body: `{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, code: CodeInvalidRequest, id: "null"},
		{name: "no_method_no_result", body: `{"jsonrpc":"2.0","id":1}`, code: CodeInvalidRequest, id: "1"},
		{name: "method_and_result", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","result":{}}`, code: CodeInvalidRequest, id: "1"},
		{name: "duplicate_method", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"admin_x"}}`, code: CodeInvalidRequest, id: "1"},
		{name: "case_variant_method", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call"}`, code: CodeInvalidRequest, id: "1"},
		{name: "array_params", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["admin_reset_key"]}`, code: CodeInvalidParams, id: "1"},
		{name: "string_params", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"x"}`, code: CodeInvalidParams, id: "1"},
		{name: "missing_params", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, code: CodeInvalidParams, id: "1"},
		{name: "missing_name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`, code: CodeInvalidParams, id: "1"},
		{name: "numeric_name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, code: CodeInvalidParams, id: "1"},
		{name: "null_name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":null}}`, code: CodeInvalidParams, id: "1"},
		{name: "empty_name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}}`, code: CodeInvalidParams, id: "1"},
		{name: "control_char_name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get\u0000x"}}`, code: CodeInvalidParams, id: "1"},
		{name: "duplicate_name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","name":"admin_reset_key"}}`, code: CodeInvalidParams, id: "1"},
		{name: "case_variant_name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin_reset_key","Name":"get_customer_record"}}`, code: CodeInvalidParams, id: "1"},
		{name: "string_arguments", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":"x"}}`, code: CodeInvalidParams, id: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rg.post(t, admin, tt.body)
			if got.status != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400; body %s", got.status, got.body)
			}
			id, code, _ := rpcErr(t, got.body)
			if diff := cmp.Diff([]any{tt.code, tt.id}, []any{code, string(id)}); diff != "" {
				t.Errorf("code, id mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if log := rg.down.log(); len(log) != 0 {
		t.Fatalf("malformed requests reached the downstream: %v", log)
	}
}

func TestToolsCallAuthorization(t *testing.T) {
	rg := newRig(t, nil)
	denied := call(`1`, "admin_reset_key", `{"key_id":"KEY-PRIMARY"}`)
	got := rg.post(t, viewer, denied)
	if got.status != http.StatusForbidden {
		t.Fatalf("viewer admin_reset_key: status %d, body %s", got.status, got.body)
	}
	id, code, data := rpcErr(t, got.body)
	if code != CodeForbidden || string(id) != "1" || data["code"] != "FORBIDDEN" || data["tool"] != "admin_reset_key" {
		t.Errorf("denial = %s", got.body)
	}
	if strings.Contains(got.body, "KEY-PRIMARY") {
		t.Errorf("denial echoes arguments: %s", got.body)
	}
	// An escaped name is decoded before the decision.
	esc := `{"jsonrpc":"2.0","id":2,"method":"tools\/call","params":{"n\u0061me":"\u0061dmin_reset_key"}}`
	if got := rg.post(t, viewer, esc); got.status != http.StatusForbidden {
		t.Fatalf("escaped admin call: status %d, body %s", got.status, got.body)
	}
	if log := rg.down.log(); len(log) != 0 {
		t.Fatalf("denied calls reached the downstream: %v", log)
	}
	allowed := call(`3`, "admin_reset_key", `{"key_id":"KEY-PRIMARY"}`)
	got = rg.post(t, admin, allowed)
	if got.status != http.StatusOK || !strings.Contains(got.body, `"tool":"admin_reset_key"`) {
		t.Fatalf("admin call: status %d, body %s", got.status, got.body)
	}
	if diff := cmp.Diff([]string{allowed}, rg.down.bodies()); diff != "" {
		t.Errorf("downstream bodies (-want +got):\n%s", diff)
	}
	if got.header.Get("Mcp-Session-Id") != "sess-1" || got.header.Get("Keep-Alive") != "" {
		t.Errorf("response headers = %v", got.header)
	}
	// Other methods are forwarded untouched, for every role.
	if got := rg.post(t, viewer, `{"jsonrpc":"2.0","id":4,"method":"resources/list"}`); got.status != http.StatusOK {
		t.Fatalf("resources/list: %d %s", got.status, got.body)
	}
}

// requestID is the shape of the gateway's correlation ids.
var requestID = regexp.MustCompile(`^[0-9a-f]{12}-[0-9a-f]{12}$`)

func TestHeadersSentDownstream(t *testing.T) {
	rg := newRig(t, nil)
	got := rg.post(t, viewer, call(`1`, "get_customer_record", ""),
		"X-MCP-Gateway-Role", "admin",
		"x-mcp-gateway-subject", "root",
		"X_MCP_GATEWAY_ROLE", "admin",
		"X-Mcp-Gateway-Request-Id", "forged",
		"Connection", "X-Secret-Hop",
		"X-Secret-Hop", "1",
		"Keep-Alive", "timeout=5",
		"Proxy-Authorization", "Basic eA==",
		"Te", "trailers",
		"Mcp-Session-Id", "sess-9",
		"Mcp-Protocol-Version", "2025-11-25",
		"Accept-Encoding", "gzip",
	)
	if got.status != http.StatusOK {
		t.Fatalf("status %d body %s", got.status, got.body)
	}
	log := rg.down.log()
	if len(log) != 1 {
		t.Fatalf("downstream received %d requests", len(log))
	}
	h := log[0].Header
	want := map[string][]string{
		HeaderSubject:          {"viewer"},
		HeaderRole:             {"viewer"},
		"Mcp-Session-Id":       {"sess-9"},
		"Mcp-Protocol-Version": {"2025-11-25"},
	}
	for k, v := range want {
		if diff := cmp.Diff(v, h.Values(k)); diff != "" {
			t.Errorf("header %s (-want +got):\n%s", k, diff)
		}
	}
	if rid := h.Get(HeaderRequestID); !requestID.MatchString(rid) {
		t.Errorf("request id = %q, want the gateway's own (12 hex digits, '-', 12 hex digits)", rid)
	}
	for _, k := range []string{"Authorization", "X_mcp_gateway_role", "X-Secret-Hop", "Keep-Alive", "Proxy-Authorization", "Te"} {
		if v := h.Values(k); len(v) > 0 {
			t.Errorf("header %s forwarded: %q", k, v)
		}
	}
	if log[0].Host != strings.TrimPrefix(rg.dsrv.URL, "http://") {
		t.Errorf("Host = %q, want the downstream's %q", log[0].Host, rg.dsrv.URL)
	}
}

func TestBatchSplitAndMerge(t *testing.T) {
	rg := newRig(t, nil)
	batch := `[` + call(`1`, "get_customer_record", `{"customer_id":"CUST-00001"}`) + `,` +
		call(`2`, "admin_reset_key", "") + `,{"jsonrpc":"2.0","id":3,"method":"tools/list"},` +
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"admin_list_audit_log"}},` +
		`{"jsonrpc":"2.0","method":"notifications/initialized"},` + `{"jsonrpc":"2.0","id":4,"method":5},7]`
	got := rg.post(t, viewer, batch)
	if got.status != http.StatusOK {
		t.Fatalf("status %d body %s", got.status, got.body)
	}
	var answers []struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(got.body), &answers); err != nil {
		t.Fatalf("%v: %s", err, got.body)
	}
	var ids []string
	var codes []int
	for _, a := range answers {
		ids = append(ids, string(a.ID))
		c := 0
		if a.Error != nil {
			c = a.Error.Code
		}
		codes = append(codes, c)
	}
	if diff := cmp.Diff([]string{"1", "2", "3", "4", "null"}, ids); diff != "" {
		t.Errorf("answer ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{0, CodeForbidden, 0, CodeInvalidRequest, CodeInvalidRequest}, codes); diff != "" {
		t.Errorf("answer codes (-want +got):\n%s", diff)
	}
	bodies := rg.down.bodies()
	if len(bodies) != 3 {
		t.Fatalf("downstream received %d requests, want 3: %v", len(bodies), bodies)
	}
	for _, b := range bodies {
		if strings.Contains(b, "admin_") {
			t.Errorf("denied member reached the downstream: %s", b)
		}
		if strings.HasPrefix(b, "[") {
			t.Errorf("downstream received a batch: %s", b)
		}
	}
}

func TestNotifications(t *testing.T) {
	rg := newRig(t, nil)
	note := `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"admin_reset_key"}}`
	if got := rg.post(t, viewer, note); got.status != http.StatusNoContent || got.body != "" {
		t.Errorf("denied notification: %d %q", got.status, got.body)
	}
	if got := rg.post(t, viewer, `[`+note+`,`+note+`]`); got.status != http.StatusNoContent || got.body != "" {
		t.Errorf("denied notification batch: %d %q", got.status, got.body)
	}
	if len(rg.down.log()) != 0 {
		t.Fatalf("denied notifications reached the downstream")
	}
	ok := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	if got := rg.post(t, viewer, ok); got.status != http.StatusAccepted || got.body != "" {
		t.Errorf("allowed notification: %d %q", got.status, got.body)
	}
	if got := rg.post(t, viewer, `[`+ok+`,`+note+`]`); got.status != http.StatusAccepted || got.body != "" {
		t.Errorf("mixed notification batch: %d %q", got.status, got.body)
	}
	// A client's answer to a server request is forwarded too.
	if got := rg.post(t, viewer, `{"jsonrpc":"2.0","id":"srv-1","result":{}}`); got.status != http.StatusAccepted {
		t.Errorf("client response: %d %q", got.status, got.body)
	}
	if diff := cmp.Diff([]string{ok, ok, `{"jsonrpc":"2.0","id":"srv-1","result":{}}`}, rg.down.bodies()); diff != "" {
		t.Errorf("downstream bodies (-want +got):\n%s", diff)
	}
}

func TestAwkwardIDs(t *testing.T) {
	rg := newRig(t, nil)
	for _, id := range []string{`0`, `""`, `null`, `1.5`, `-1e3`, `1.0`, `"a\"b"`, `12345678901234567890`} {
		t.Run(id, func(t *testing.T) {
			got := rg.post(t, viewer, call(id, "admin_reset_key", ""))
			if gotID, _, _ := rpcErr(t, got.body); string(gotID) != id || got.status != http.StatusForbidden {
				t.Errorf("denied: id %s status %d, want id %s", gotID, got.status, id)
			}
			got = rg.post(t, viewer, call(id, "get_customer_record", ""))
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal([]byte(got.body), &m)
			if string(m.ID) != id {
				t.Errorf("forwarded: id %s, want %s (%s)", m.ID, id, got.body)
			}
			got = rg.post(t, viewer, `[`+call(id, "admin_reset_key", "")+`]`)
			if !strings.Contains(got.body, `"id":`+id+`,`) {
				t.Errorf("batch: %s does not echo id %s", got.body, id)
			}
		})
	}
}

func TestUpstreamFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	g, err := New(dead, DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	got := rg.post(t, viewer, call(`"u"`, "get_customer_record", ""))
	if id, code, _ := rpcErr(t, got.body); got.status != http.StatusBadGateway || code != CodeUpstreamUnavailable || string(id) != `"u"` {
		t.Errorf("unavailable: %d %s", got.status, got.body)
	}
	got = rg.post(t, viewer, `[`+call(`1`, "get_customer_record", "")+`,`+call(`2`, "admin_x", "")+`]`)
	if got.status != http.StatusOK || !strings.Contains(got.body, `"code":-32003`) || !strings.Contains(got.body, `"code":-32001`) {
		t.Errorf("unavailable batch: %d %s", got.status, got.body)
	}

	// The slow call is held downstream until the gateway gives it up (its
	// request's context ends) or 2 s pass. The gateway must answer while
	// it is held: 2 s is 20 times the timeout (the answer came in 0.10-0.11 s
	// under -race with one core busy), and a gateway that waited for the
	// downstream, or armed its timer 30 times too long, answered after the
	// release.
	hold := make(chan struct{})
	down := &downstream{}
	dsrv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"name":"slow"`) {
				select {
				case <-hold:
				case <-r.Context().Done():
				}
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		down.ServeHTTP(w, r)
	}))
	g, err = New(dsrv.URL+"/mcp", DemoTokens(), &Options{Timeout: 100 * time.Millisecond, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	slow := &rig{url: newServer(t, g).URL}
	release := time.AfterFunc(2*time.Second, func() { close(hold) })
	start := time.Now()
	got = slow.post(t, viewer, call(`9`, "slow", ""))
	if !release.Stop() {
		t.Errorf("no answer within 2 s of a 100ms timeout (took %v): the gateway waited for the downstream", time.Since(start))
	}
	if id, code, _ := rpcErr(t, got.body); got.status != http.StatusGatewayTimeout || code != CodeUpstreamUnavailable || string(id) != "9" {
		t.Errorf("slow: %d %s", got.status, got.body)
	}
	t.Logf("the timeout's answer took %v", time.Since(start))
}

func TestSSEStreamedIncrementally(t *testing.T) {
	for _, batch := range []bool{false, true} {
		name := map[bool]string{false: "single", true: "batch"}[batch]
		t.Run(name, func(t *testing.T) {
			rg := newRig(t, nil)
			rg.down.release = make(chan struct{})
			body := call(`5`, "stream", "")
			if batch {
				body = `[` + body + `,` + call(`6`, "admin_x", "") + `]`
			}
			// A gateway that held the stream back until the downstream
			// finished would wait for ever: the downstream waits for the
			// client to see the first event. The client gives up first.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rg.gw.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Authorization", viewer)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type = %q", ct)
			}
			var seen []string
			err = readEvents(resp.Body, func(ev *event) {
				seen = append(seen, string(ev.data))
				if strings.Contains(string(ev.data), "notifications/progress") {
					// The downstream is still blocked: this event was streamed.
					close(rg.down.release)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
				`{"jsonrpc":"2.0","id":5,"result":{"done":true}}`,
			}
			if batch {
				if len(seen) != 3 || !strings.Contains(seen[0], `"id":6`) {
					t.Fatalf("events = %q", seen)
				}
				seen = seen[1:]
			}
			if diff := cmp.Diff(want, seen); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterToolsList(t *testing.T) {
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	plain := newRig(t, nil)
	if got := plain.post(t, viewer, list); !strings.Contains(got.body, "admin_reset_key") {
		t.Errorf("unfiltered list lacks admin tool: %s", got.body)
	}
	filtered := newRig(t, &Options{FilterToolsList: true})
	// A list filtered for its caller is private (an absent cacheScope is public).
	want := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_customer_record"},{"name":"trigger_refund"}],"cacheScope":"private"}}`
	if got := filtered.post(t, viewer, list); got.body != want {
		t.Errorf("filtered list = %s, want %s", got.body, want)
	}
	if got := filtered.post(t, admin, list); !strings.Contains(got.body, "admin_reset_key") {
		t.Errorf("admin list lacks admin tool: %s", got.body)
	}
	got := filtered.post(t, viewer, `[`+list+`]`)
	if got.body != `[`+want+`]` {
		t.Errorf("filtered batch list = %s", got.body)
	}
}

func TestBodyLimitAndMethods(t *testing.T) {
	rg := newRig(t, &Options{MaxBodyBytes: 64})
	got := rg.post(t, viewer, call(`1`, "get_customer_record", `{"pad":"`+strings.Repeat("x", 100)+`"}`))
	if got.status != http.StatusRequestEntityTooLarge {
		t.Errorf("big body: %d %s", got.status, got.body)
	}
	resp, err := http.Get(rg.gw.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]string
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if diff := cmp.Diff(map[string]string{"status": "ok", "upstream": rg.dsrv.URL + "/mcp"}, h); diff != "" {
		t.Errorf("healthz (-want +got):\n%s", diff)
	}
	req, _ := http.NewRequest(http.MethodPut, rg.gw.URL+"/mcp", nil)
	req.Header.Set("Authorization", viewer)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %v %v", resp, err)
	}
	// GET and DELETE need a token and are then forwarded with the session.
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(m, rg.gw.URL+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", "s-42")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s without token: %v %v", m, resp, err)
		}
		req.Header.Set("Authorization", viewer)
		resp, err = http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "s-42" {
			t.Fatalf("%s: %v %v", m, resp, err)
		}
		resp.Body.Close()
	}
	if n := len(rg.down.log()); n != 2 {
		t.Errorf("downstream received %d requests, want 2", n)
	}
}

func TestStandardHeaderMismatch(t *testing.T) {
	rg := newRig(t, nil)
	got := rg.post(t, admin, call(`1`, "get_customer_record", ""), "Mcp-Name", "admin_reset_key")
	if got.status != http.StatusBadRequest {
		t.Errorf("Mcp-Name mismatch: %d %s", got.status, got.body)
	}
	got = rg.post(t, admin, call(`1`, "get_customer_record", ""), "Mcp-Method", "tools/list")
	if got.status != http.StatusBadRequest {
		t.Errorf("Mcp-Method mismatch: %d %s", got.status, got.body)
	}
	if len(rg.down.log()) != 0 {
		t.Fatalf("mismatched requests reached the downstream")
	}
}

func TestArgumentRulesAndLimits(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Read, Cost: 1,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100, ExemptRoles: []string{"admin"}}}}}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []audit.Event
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, *e)
		return nil
	})
	rg := newRig(t, &Options{Policy: pol, Limiter: lim, Audit: sink})
	tests := []struct {
		name, auth, args string
		status           int
	}{
		{name: "over_limit", auth: viewer, args: `{"amount":500}`, status: http.StatusForbidden},
		{name: "duplicate_field", auth: viewer, args: `{"amount":5,"amount":500}`, status: http.StatusForbidden},
		{name: "case_variant_field", auth: viewer, args: `{"amount":5,"Amount":500}`, status: http.StatusForbidden},
		{name: "string_amount", auth: viewer, args: `{"amount":"5"}`, status: http.StatusForbidden},
		{name: "huge_amount", auth: viewer, args: `{"amount":1e400}`, status: http.StatusForbidden},
		{name: "under_limit", auth: viewer, args: `{"amount":50}`, status: http.StatusOK},
		{name: "exempt_role", auth: admin, args: `{"amount":500}`, status: http.StatusOK},
		{name: "second_under_limit", auth: viewer, args: `{"amount":50}`, status: http.StatusOK},
		{name: "rate_limited", auth: viewer, args: `{"amount":50}`, status: http.StatusTooManyRequests},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rg.post(t, tt.auth, call(`1`, "trigger_refund", tt.args))
			if got.status != tt.status {
				t.Fatalf("status %d, want %d: %s", got.status, tt.status, got.body)
			}
			if tt.status == http.StatusTooManyRequests {
				_, code, data := rpcErr(t, got.body)
				if code != CodeLimitExceeded || got.header.Get("Retry-After") == "" || data["retry_after_seconds"] == nil || data["code"] != "RATE_LIMIT_EXCEEDED" {
					t.Errorf("rate limit answer: %v %s", got.header, got.body)
				}
			}
		})
	}
	for _, b := range rg.down.bodies() {
		if strings.Contains(b, "500") && strings.Contains(b, "viewer") {
			t.Errorf("over-limit call forwarded: %s", b)
		}
	}
	if n := len(rg.down.bodies()); n != 3 {
		t.Errorf("downstream received %d calls, want 3", n)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, e := range events {
		got = append(got, e.Subject+" "+string(e.Phase)+" "+e.Code+" cost="+strconv.FormatFloat(e.Cost, 'g', -1, 64))
		if e.Args != nil || e.ArgsSHA256 == "" || e.CorrelationID == "" || e.Tool != "trigger_refund" {
			t.Errorf("event %+v", e)
		}
	}
	// The cost is what was charged: nothing for a refusal (audit.Event.Cost).
	want := []string{"viewer outcome FORBIDDEN cost=0", "viewer outcome FORBIDDEN cost=0", "viewer outcome FORBIDDEN cost=0",
		"viewer outcome FORBIDDEN cost=0", "viewer outcome FORBIDDEN cost=0", "viewer outcome  cost=1", "admin outcome  cost=1",
		"viewer outcome  cost=1", "viewer outcome RATE_LIMIT_EXCEEDED cost=0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit events (-want +got):\n%s", diff)
	}
}

func TestDecisionLogs(t *testing.T) {
	rg := newRig(t, nil)
	rg.post(t, viewer, call(`1`, "admin_reset_key", `{"key_id":"SECRET-ARG"}`))
	rg.post(t, admin, call(`2`, "admin_reset_key", `{"key_id":"SECRET-ARG"}`))
	logs := rg.logs.String()
	for _, want := range []string{"msg=deny", "subject=viewer", "tool=admin_reset_key", "outcome=FORBIDDEN", "msg=allow", "subject=admin", "cid="} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	for _, bad := range []string{"SECRET-ARG", "viewer-token", "admin-token"} {
		if strings.Contains(logs, bad) {
			t.Errorf("logs contain %q:\n%s", bad, logs)
		}
	}
}

// TestSessionBoundToPrincipal: a session opened by one principal cannot be
// used by another, even with a valid token of its own; the downstream, which
// trusts the gateway, never sees the attempt.
func TestSessionBoundToPrincipal(t *testing.T) {
	rg := newRig(t, nil)
	// The downstream answers with Mcp-Session-Id: sess-1, bound to viewer.
	if got := rg.post(t, viewer, call(`1`, "get_customer_record", "")); got.status != http.StatusOK || got.header.Get("Mcp-Session-Id") != "sess-1" {
		t.Fatalf("open: status %d session %q", got.status, got.header.Get("Mcp-Session-Id"))
	}
	before := len(rg.down.log())
	got := rg.post(t, admin, call(`2`, "get_customer_record", ""), "Mcp-Session-Id", "sess-1")
	if got.status != http.StatusNotFound {
		t.Fatalf("other principal on sess-1: status %d body %s, want 404", got.status, got.body)
	}
	if _, code, _ := rpcErr(t, got.body); code != CodeForbidden {
		t.Errorf("code %d, want %d", code, CodeForbidden)
	}
	if n := len(rg.down.log()); n != before {
		t.Errorf("the hijack attempt reached the downstream (%d requests, want %d)", n, before)
	}
	// The owner keeps using it.
	if got := rg.post(t, viewer, call(`3`, "get_customer_record", ""), "Mcp-Session-Id", "sess-1"); got.status != http.StatusOK {
		t.Errorf("owner on sess-1: status %d", got.status)
	}
	// An id the gateway has not seen is bound on first use.
	if got := rg.post(t, admin, call(`4`, "get_customer_record", ""), "Mcp-Session-Id", "sess-2"); got.status != http.StatusOK {
		t.Errorf("admin on new sess-2: status %d", got.status)
	}
	if got := rg.post(t, viewer, call(`5`, "get_customer_record", ""), "Mcp-Session-Id", "sess-2"); got.status != http.StatusNotFound {
		t.Errorf("viewer on admin's sess-2: status %d, want 404", got.status)
	}
	// DELETE by the owner ends the binding.
	req, _ := http.NewRequest(http.MethodDelete, rg.url+"/mcp", nil)
	req.Header.Set("Authorization", admin)
	req.Header.Set("Mcp-Session-Id", "sess-2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: status %d", resp.StatusCode)
	}
	if got := rg.post(t, viewer, call(`6`, "get_customer_record", ""), "Mcp-Session-Id", "sess-2"); got.status != http.StatusOK {
		t.Errorf("after DELETE, sess-2 is free again: status %d", got.status)
	}
}

func TestSessionTableBounded(t *testing.T) {
	s := newSessions()
	for i := range maxSessions + 1000 {
		s.bind(strconv.Itoa(i), "a")
	}
	if n := len(s.owner); n > maxSessions {
		t.Errorf("%d bindings, want at most %d", n, maxSessions)
	}
	if !s.admit(strconv.Itoa(maxSessions+999), "a") || s.admit(strconv.Itoa(maxSessions+999), "b") {
		t.Error("the newest binding was lost")
	}
}

// TestWriteIntentUnavailable: a write whose write-ahead audit record cannot
// be made is refused with 503 and never forwarded; reads still pass.
func TestWriteIntentUnavailable(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write}}
	cfg.WriteAllowlist = []string{"trigger_refund"}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var intents, outcomes atomic.Int64
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		if e.Phase == audit.PhaseIntent {
			intents.Add(1)
			return errors.New("disk full")
		}
		outcomes.Add(1)
		return nil
	})
	rg := newRig(t, &Options{Policy: pol, Audit: sink})
	got := rg.post(t, viewer, call(`1`, "trigger_refund", `{"amount":5}`))
	if got.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: %s", got.status, got.body)
	}
	if _, code, data := rpcErr(t, got.body); code != CodeInternal || data["code"] != "AUDIT_UNAVAILABLE" {
		t.Errorf("answer %s", got.body)
	}
	if n := len(rg.down.log()); n != 0 {
		t.Errorf("the write reached the downstream %d times without a durable intent", n)
	}
	if intents.Load() != 1 || outcomes.Load() != 1 {
		t.Errorf("intents %d outcomes %d, want 1 and 1", intents.Load(), outcomes.Load())
	}
	if got := rg.post(t, viewer, call(`2`, "get_customer_record", "")); got.status != http.StatusOK {
		t.Errorf("read refused: %d", got.status)
	}
}

// TestWriteIntentUnavailableChargesNothing: a write refused because its
// intent could not be made was never forwarded, so the limiter gives back
// what it charged: the retry, once the trail is back, passes a spend and a
// rate cap that the first attempt alone would have used up, and the
// refusal's record has cost 0.
func TestWriteIntentUnavailableChargesNothing(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write, Cost: 5}}
	cfg.WriteAllowlist = []string{"trigger_refund"}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Spend, Scope: limiter.User, Max: 5, Window: time.Hour},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	down.Store(true)
	var mu sync.Mutex
	var costs []float64
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		if e.Phase == audit.PhaseIntent {
			if down.Load() {
				return errors.New("disk full")
			}
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		costs = append(costs, e.Cost)
		return nil
	})
	rg := newRig(t, &Options{Policy: pol, Audit: sink, Limiter: lim})
	if got := rg.post(t, viewer, call(`1`, "trigger_refund", `{"amount":5}`)); got.status != http.StatusServiceUnavailable {
		t.Fatalf("with the trail down: status %d, want 503: %s", got.status, got.body)
	}
	down.Store(false)
	if got := rg.post(t, viewer, call(`2`, "trigger_refund", `{"amount":5}`)); got.status != http.StatusOK {
		t.Fatalf("the retry with the trail back: status %d, want 200: %s", got.status, got.body)
	}
	if got := rg.post(t, viewer, call(`3`, "trigger_refund", `{"amount":5}`)); got.status != http.StatusTooManyRequests {
		t.Errorf("a third call: status %d, want 429 (the retry was charged): %s", got.status, got.body)
	}
	if n := len(rg.down.log()); n != 1 {
		t.Errorf("%d calls forwarded, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(costs) != 3 || costs[0] != 0 || costs[1] != 5 || costs[2] != 0 {
		t.Errorf("outcome costs %v, want [0 5 0]", costs)
	}
}

func TestAuditRecordsProtocolAndSession(t *testing.T) {
	var mu sync.Mutex
	var events []audit.Event
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, *e)
		return nil
	})
	rg := newRig(t, &Options{Audit: sink})
	rg.post(t, viewer, call(`1`, "admin_reset_key", ""), "Mcp-Protocol-Version", "2025-11-25", "Mcp-Session-Id", "sess-7")
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 {
		t.Fatalf("%d events, want 1", len(events))
	}
	if e := events[0]; e.ProtocolVersion != "2025-11-25" || e.SessionID != "sess-7" || e.Code != "FORBIDDEN" || e.Subject != "viewer" {
		t.Errorf("event = %+v", e)
	}
}

// hookStore is a MemoryStore that runs hook before each reservation.
type hookStore struct {
	*limiter.MemoryStore
	hook func()
}

func (s *hookStore) Apply(ctx context.Context, now time.Time, b *limiter.Batch) error {
	if !b.Release && !b.Refund && s.hook != nil {
		s.hook()
	}
	return s.MemoryStore.Apply(ctx, now, b)
}

// TestSessionLostAfterChargeChargesNothing: a call whose session id another
// principal took between the session check and the forwarding (here, while
// the limiter decides) is refused without being forwarded, and the limiter
// gives back what it charged: the caller's next call passes a rate cap of
// one call.
func TestSessionLostAfterChargeChargesNothing(t *testing.T) {
	store := &hookStore{MemoryStore: limiter.NewMemoryStore()}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}},
		&limiter.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var costs []float64
	var mu sync.Mutex
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		costs = append(costs, e.Cost)
		return nil
	})
	cfg := DefaultPolicyConfig()
	cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: "lookup", Class: policy.Read, Cost: 2})
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, &Options{Policy: pol, Limiter: lim, Audit: sink})
	g := rg.gw.Config.Handler.(*Gateway)
	store.hook = func() {
		store.hook = nil
		if !g.sessions.admit("taken-meanwhile", "admin") {
			t.Error("admin could not take the session")
		}
	}
	got := rg.post(t, viewer, call(`1`, "lookup", ""), "Mcp-Session-Id", "taken-meanwhile")
	if got.status != http.StatusNotFound {
		t.Fatalf("status %d, want 404 (session not found): %s", got.status, got.body)
	}
	if n := len(rg.down.log()); n != 0 {
		t.Fatalf("%d requests forwarded, want none", n)
	}
	if got := rg.post(t, viewer, call(`2`, "lookup", "")); got.status != http.StatusOK {
		t.Errorf("the next call: status %d, want 200 (the refused one was charged): %s", got.status, got.body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(costs) != 2 || costs[0] != 0 || costs[1] != 2 {
		t.Errorf("outcome costs %v, want [0 2]", costs)
	}
}
