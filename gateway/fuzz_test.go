package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recordingTransport is the downstream of the fuzz test: it records every
// body the gateway forwards and answers each like a server would.
type recordingTransport struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var b []byte
	if r.Body != nil {
		b, _ = io.ReadAll(r.Body)
	}
	rt.mu.Lock()
	rt.bodies = append(rt.bodies, b)
	rt.mu.Unlock()
	answer := `{"jsonrpc":"2.0","id":1,"result":{}}`
	if msg, err := jsonrpc.DecodeMessage(b); err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
			id, _ := json.Marshal(req.ID.Raw())
			result := `{}`
			if req.Method == "tools/list" {
				result = `{"tools":[{"name":"admin_x"},{"name":"ok"}]}`
			}
			answer = `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`
		}
	}
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(answer)),
	}, nil
}

// forwardedAdminCall reports whether body, as any plausible downstream would
// read it, is or contains a tools/call of an admin_* tool: the go-sdk's own
// decoder (case-sensitive) and encoding/json (case-insensitive, last
// duplicate wins) are both consulted.
func forwardedAdminCall(body []byte) bool {
	var sdkMsgs []jsonrpc.Message
	if msg, err := jsonrpc.DecodeMessage(body); err == nil {
		sdkMsgs = append(sdkMsgs, msg)
	}
	for _, msg := range sdkMsgs {
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
			var p mcp.CallToolParams
			if json.Unmarshal(req.Params, &p) == nil && strings.HasPrefix(p.Name, "admin_") {
				return true
			}
			var raw map[string]any
			json.Unmarshal(req.Params, &raw)
			for k, v := range raw {
				if s, ok := v.(string); ok && strings.EqualFold(k, "name") && strings.HasPrefix(s, "admin_") {
					return true
				}
			}
		}
	}
	var loose struct {
		Method string
		Params struct{ Name string }
	}
	if json.Unmarshal(body, &loose) == nil && strings.EqualFold(loose.Method, "tools/call") && strings.HasPrefix(loose.Params.Name, "admin_") {
		return true
	}
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) == nil {
		for _, m := range batch {
			if forwardedAdminCall(m) {
				return true
			}
		}
	}
	return false
}

// FuzzGateway posts arbitrary bodies as the viewer through a gateway that
// filters tools/list, and fails when the downstream receives a tools/call
// of an admin_* tool as any plausible server would read it (see
// forwardedAdminCall), a forwarded body that is not a verbatim part of the
// request, an answer that is not JSON, or a filtered listing that shows an
// admin tool. Seeds in testdata/fuzz/FuzzGateway. Bound a run by its
// executions, not by time: with Go 1.26, a duration -fuzztime can end in a
// bare "context deadline exceeded", no input written (golang/go#75804,
// fixed in Go 1.27):
//
//	go test ./gateway -run '^$' -fuzz '^FuzzGateway$' -fuzztime 500000x
func FuzzGateway(f *testing.F) {
	seeds := []string{
		call(`1`, "admin_reset_key", `{"key_id":"K"}`),
		call(`1`, "get_customer_record", `{"customer_id":"CUST-00001"}`),
		`[` + call(`1`, "ok", "") + `,` + call(`2`, "admin_x", "") + `]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","Name":"admin_x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","name":"admin_x"}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call","method":"tools/list","params":{"name":"admin_x"}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"admin_x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`[]`, `{}`, `null`, `[1,{"jsonrpc":"2.0"}]`,
	}
	for _, s := range seeds {
		f.Add(s, uint8(0))
	}
	rt := &recordingTransport{}
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: rt, Logger: discardLogger(), FilterToolsList: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string, hdr uint8) {
		rt.mu.Lock()
		rt.bodies = nil
		rt.mu.Unlock()
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		if hdr&1 != 0 {
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		if hdr&2 != 0 {
			req.Header.Set("Mcp-Name", "ok")
		}
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		rt.mu.Lock()
		defer rt.mu.Unlock()
		for _, b := range rt.bodies {
			if forwardedAdminCall(b) {
				t.Fatalf("a viewer's admin call was forwarded: %q (request %q)", b, body)
			}
			if !bytes.Contains([]byte(body), b) {
				t.Fatalf("forwarded %q is not a verbatim part of the request %q", b, body)
			}
		}
		if out := w.Body.Bytes(); len(out) > 0 && !json.Valid(out) {
			t.Fatalf("response is not JSON: %q", out)
		}
		if strings.Contains(w.Body.String(), `{"name":"admin_x"}`) {
			t.Fatalf("filtered tools/list shows an admin tool: %s", w.Body.String())
		}
	})
}
