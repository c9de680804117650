package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startHTTP runs the binary in HTTP mode on a free loopback port and
// returns the base URL (without /mcp).
func startHTTP(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-http", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	urlc := make(chan string, 1)
	var logs syncBuffer
	go func() {
		re := regexp.MustCompile(`url=(http://\S+)/mcp`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urlc <- m[1]
			}
		}
	}()
	select {
	case u := <-urlc:
		return u
	case <-time.After(20 * time.Second):
		t.Fatalf("the HTTP server did not report its address; stderr:\n%s", &logs)
	}
	return ""
}

// post sends one JSON-RPC message as the gateway would, with its identity
// headers, and returns the HTTP status and decoded body.
func post(t *testing.T, base, body string, headers map[string]string) (int, response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, parseResponse(t, strings.TrimSpace(string(b)))
}

func received(t *testing.T, base string) []receivedRequest {
	t.Helper()
	res, err := http.Get(base + "/_received")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out []receivedRequest
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHTTPClient(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			base := startHTTP(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "refund-http-test", Version: "v1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: v.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()

			lt, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range lt.Tools {
				names = append(names, tool.Name)
			}
			if diff := cmp.Diff([]string{"admin_list_audit_log", "admin_reset_key", "get_customer_record", "trigger_refund"}, names); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}

			if got, we := call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00002"}); we != nil || got["found"] != true {
				t.Errorf("get_customer_record: %v %v", got, we)
			}
			if got, we := call(t, cs, "admin_reset_key", map[string]any{"key_id": "KEY-PRIMARY"}); we != nil || got["status"] != "key_reset" {
				t.Errorf("admin_reset_key: %v %v", got, we)
			}
			if got, we := call(t, cs, "admin_reset_key", map[string]any{"key_id": "KEY-NOPE"}); we != nil || got["found"] != false {
				t.Errorf("admin_reset_key of an unknown key: %v %v, want found: false", got, we)
			}
			if _, we := call(t, cs, "trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": true, "reason": "boolean amount here"}); we == nil || we.Code != -32602 || !strings.Contains(we.Message, `"amount"`) {
				t.Errorf("boolean amount over HTTP: %v, want -32602 naming amount", we)
			}
			if _, we := call(t, cs, "admin_drop_db", map[string]any{}); we == nil || we.Code != -32601 {
				t.Errorf("unknown tool over HTTP: %v, want -32601", we)
			}

			got, we := call(t, cs, "admin_list_audit_log", map[string]any{})
			if we != nil {
				t.Fatal(we)
			}
			type rec struct{ Tool, Subject, Code string }
			var recs []rec
			for _, e := range got["events"].([]any) {
				m := e.(map[string]any)
				if m["phase"] == "outcome" {
					code, _ := m["code"].(string)
					recs = append(recs, rec{m["tool"].(string), m["subject"].(string), code})
				}
			}
			wantRecs := []rec{
				{"get_customer_record", "anonymous", ""},
				{"admin_reset_key", "anonymous", ""},
				{"admin_reset_key", "anonymous", ""},
				{"trigger_refund", "anonymous", "INVALID_ARGUMENTS"},
				{"admin_drop_db", "anonymous", "TOOL_NOT_FOUND"},
			}
			if diff := cmp.Diff(wantRecs, recs); diff != "" {
				t.Errorf("admin_list_audit_log outcomes (-want +got):\n%s", diff)
			}

			var calls []string
			for _, r := range received(t, base) {
				if r.Method == "tools/call" {
					calls = append(calls, r.Tool)
				}
			}
			if diff := cmp.Diff([]string{"get_customer_record", "admin_reset_key", "admin_reset_key", "trigger_refund", "admin_drop_db", "admin_list_audit_log"}, calls); diff != "" {
				t.Errorf("/_received tools/call entries (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHTTPGatewayHeaders plays the gateway: raw POSTs with its identity
// headers, as the seed's curl demo does, then checks /_received and the
// per-caller spend cap keyed on the forwarded subject.
func TestHTTPGatewayHeaders(t *testing.T) {
	base := startHTTP(t, "-user-cap", "100", "-session-cap", "1000")
	as := func(sub, role, id string) map[string]string {
		return map[string]string{headerSubject: sub, headerRole: role, headerRequestID: id}
	}
	refund := func(id string, amount string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":` + amount + `,"reason":"refund via the gateway"}}}`
	}

	status, r := post(t, base, `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"admin_reset_key","arguments":{"key_id":"KEY-PRIMARY"}}}`, as("alice@example.com", "admin", "req-77"))
	if status != http.StatusOK || r.Error != nil || !strings.Contains(string(r.Result), `"status":"key_reset"`) {
		t.Fatalf("admin_reset_key as the gateway: %d %s %+v", status, r.Result, r.Error)
	}
	if _, r := post(t, base, refund("1", "60"), as("alice@example.com", "support", "req-1")); r.Error != nil {
		t.Fatalf("alice's first refund: %+v", r.Error)
	}
	_, r = post(t, base, refund("2", "60"), as("alice@example.com", "support", "req-2"))
	if r.Error == nil || r.Error.Code != -32029 {
		t.Fatalf("alice over her cap: %+v, want -32029", r)
	}
	var data map[string]any
	if err := json.Unmarshal(r.Error.Data, &data); err != nil || data["retry_after_seconds"].(float64) <= 0 {
		t.Errorf("spend denial data %s: want retry_after_seconds > 0", r.Error.Data)
	}
	if _, r := post(t, base, refund("3", "60"), as("bob@example.com", "support", "req-3")); r.Error != nil {
		t.Errorf("bob's refund (his own cap): %+v", r.Error)
	}
	_, r = post(t, base, refund("4", "1"), as("\u00e5lice", "support", "req-4"))
	if r.Error == nil || r.Error.Code != -32000 {
		t.Errorf("non-ASCII subject header: %+v, want -32000 UNAUTHENTICATED", r)
	}

	type entry struct{ Method, ID, Tool, Subject, Role, RequestID string }
	var got []entry
	for _, e := range received(t, base) {
		got = append(got, entry{e.Method, string(e.ID), e.Tool, e.Subject, e.Role, e.RequestID})
	}
	want := []entry{
		{"tools/call", "77", "admin_reset_key", "alice@example.com", "admin", "req-77"},
		{"tools/call", "1", "trigger_refund", "alice@example.com", "support", "req-1"},
		{"tools/call", "2", "trigger_refund", "alice@example.com", "support", "req-2"},
		{"tools/call", "3", "trigger_refund", "bob@example.com", "support", "req-3"},
		{"tools/call", "4", "trigger_refund", "\u00e5lice", "support", "req-4"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/_received (-want +got):\n%s", diff)
	}

	req, _ := http.NewRequest(http.MethodDelete, base+"/_received", nil)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /_received: %v %v", res, err)
	}
	if got := received(t, base); len(got) != 0 {
		t.Errorf("/_received after DELETE: %v, want empty", got)
	}
}

func TestHTTPRefusesNonLoopback(t *testing.T) {
	cmd, stderr := command([]string{"-http", "0.0.0.0:0"})
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(stderr.String(), "not a loopback address") {
		t.Errorf("-http 0.0.0.0:0: %v, stderr:\n%s\nwant a non-zero exit naming the loopback rule", err, stderr)
	}
}
