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
)

// v2NoCaseKey is a member name as Go's encoding/json/v2 matches it to a
// struct field under MatchCaseInsensitiveNames(true) or a `case:ignore`
// tag: '_' and '-' dropped, case folded (v2's foldName). Checked against
// GOEXPERIMENT=jsonv2 with Go 1.26: {"result":{},"me_thod":"tools/call",
// "para-ms":{"na_me":"admin_x"}} decodes there with Method "tools/call"
// and Params.Name "admin_x".
func v2NoCaseKey(k string) string {
	k = strings.NewReplacer("_", "", "-", "").Replace(k)
	return strings.ToLower(k)
}

// v2NoCaseToolCall reports whether a downstream decoding body with
// encoding/json/v2's case-insensitive matching, and dispatching on a
// non-empty method, would run a tools/call of an admin_* tool.
func v2NoCaseToolCall(body []byte) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return false
	}
	var method string
	var params map[string]json.RawMessage
	for k, v := range obj {
		switch v2NoCaseKey(k) {
		case "method":
			json.Unmarshal(v, &method)
		case "params":
			json.Unmarshal(v, &params)
		}
	}
	if method != "tools/call" {
		return false
	}
	for k, v := range params {
		var name string
		if v2NoCaseKey(k) == "name" && json.Unmarshal(v, &name) == nil && strings.HasPrefix(name, "admin_") {
			return true
		}
	}
	return false
}

// TestReview25bDelimiterSpellings: member names that differ from a known
// one by '_' or '-' ("me_thod", "_params", "na-me") passed as unknown
// members. Go's own encoding/json/v2, with the case-insensitive matching
// a lenient downstream turns on (MatchCaseInsensitiveNames, `case:ignore`),
// ignores those characters as well as case: it read the client response
// below, which the gateway forwarded unjudged, as a viewer's tools/call of
// admin_x. They are refused as the other ambiguous spellings are.
func TestReview25bDelimiterSpellings(t *testing.T) {
	var mu sync.Mutex
	var got [][]byte
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{},"me_thod":"tools/call","para-ms":{"na_me":"admin_x"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"_method":"tools/call","_params":{"name":"admin_x"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"},"METH-OD":"tools/call","params_":{"name":"admin_x"}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{},"me_thod":"tools/call","para-ms":{"na_me":"admin_x"}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","na_me":"admin_x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record"},"para_ms":{"name":"admin_x"}}`,
	} {
		mu.Lock()
		got = nil
		mu.Unlock()
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Authorization", viewer)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		mu.Lock()
		fwd := got
		mu.Unlock()
		for _, b := range fwd {
			if v2NoCaseToolCall(b) || bytes.Contains(b, []byte("admin_x")) {
				t.Errorf("forwarded %s: a downstream on encoding/json/v2 with case-insensitive names runs admin_x", b)
			}
		}
		if !strings.Contains(w.Body.String(), "ambiguous") {
			t.Errorf("%s: answered %d %s, want a refusal of the ambiguous name", body, w.Code, w.Body.String())
		}
	}
}
