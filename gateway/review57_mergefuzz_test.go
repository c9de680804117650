package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// r57mTransport answers each member of a batch with the body its id picks:
// a for id 1, b for id "x", as an event stream when the flag says so.
type r57mTransport struct {
	a, b       string
	sseA, sseB bool
}

func (rt *r57mTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	ans, sse := rt.a, rt.sseA
	if bytes.Contains(body, []byte(`"id":"x"`)) {
		ans, sse = rt.b, rt.sseB
	}
	ct := "application/json"
	if sse {
		ct = "text/event-stream"
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ct}},
		Body: io.NopCloser(strings.NewReader(ans)), ContentLength: -1}, nil
}

// r57mEvents parses an event stream as the SSE specification does (lines
// end at CRLF, LF or CR; one space after the colon dropped) and returns
// the data of every event a client dispatches as a message.
func r57mEvents(s string) []string {
	s = strings.TrimPrefix(s, "\ufeff")
	var out []string
	var data []string
	hasData := false
	name := ""
	for s != "" {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break // an incomplete last line: not dispatched
		}
		line := s[:i]
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
		if line == "" {
			if hasData && (name == "" || name == "message") {
				out = append(out, strings.Join(data, "\n"))
			}
			data, hasData, name = nil, false, ""
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			data = append(data, value)
			hasData = true
		case "event":
			name = value
		}
	}
	return out
}

// r57mCheck checks the merged answer of the batch [id 1, id "x"] (whose
// members a and b were answered with): every message the client reads is
// JSON, and each member gets exactly one response, with its own id byte
// for byte; a JSON answer has them in the client's order.
func r57mCheck(t *testing.T, w *httptest.ResponseRecorder, in string) {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d, body %q (%s)", w.Code, w.Body, in)
	}
	var msgs []json.RawMessage
	ordered := false
	if isSSE(w.Header()) {
		for _, d := range r57mEvents(w.Body.String()) {
			if !json.Valid([]byte(d)) {
				t.Fatalf("an event a client reads is not JSON: %q in %q (%s)", d, w.Body, in)
			}
			msgs = append(msgs, json.RawMessage(d))
		}
	} else {
		ordered = true
		if err := json.Unmarshal(w.Body.Bytes(), &msgs); err != nil {
			t.Fatalf("merged answer not a JSON array: %v: %q (%s)", err, w.Body, in)
		}
	}
	var ids []string
	for _, m := range msgs {
		var f map[string]json.RawMessage
		if json.Unmarshal(m, &f) != nil {
			if !ordered {
				continue // a server's batch of requests, say
			}
			t.Fatalf("member answer not an object: %s (%s)", m, in)
		}
		if _, ok := f["method"]; ok {
			if ordered {
				t.Fatalf("a request in a JSON answer: %s (%s)", m, in)
			}
			continue
		}
		ids = append(ids, string(f["id"]))
	}
	if len(ids) != 2 {
		t.Fatalf("responses with ids %q, want one for 1 and one for \"x\": %q (%s)", ids, w.Body, in)
	}
	if ids[0] == ids[1] || ids[0] != `1` && ids[0] != `"x"` || ids[1] != `1` && ids[1] != `"x"` ||
		ordered && ids[0] != `1` {
		t.Fatalf("responses with ids %q, want 1 then \"x\": %q (%s)", ids, w.Body, in)
	}
}

var r57mSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
	"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n",
	"id: 3\nretry: 100\ndata:\n\n: ping\n\ndata: {\"jsonrpc\":\"2.0\",\n" +
		"data: \"method\":\"notifications/progress\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
	"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
	"event: other\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
	"event:  message \ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
	"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
	"\n{\"jsonrpc\":\"2.0\",\r\n\"id\":1,\r\"result\":{}}\n",
	`[{"jsonrpc":"2.0","id":1,"result":{}}]`,
	``,
	`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"admin_x"},{"name":"ok"}]}}`,
	"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"ok\"}],\"Tools\":[]}}\n\n",
}

// FuzzReview57MergedBatch sends the batch [id 1, id "x"] through a gateway
// whose downstream answers each member with fuzzed bodies, as JSON or as
// an event stream, to a client that accepts a stream or not, and checks
// what the client reads ([r57mCheck]), and that a viewer's filtered
// listing never shows an admin tool.
//
//	go test ./gateway -run '^$' -fuzz '^FuzzReview57MergedBatch$' -fuzztime 200000x
func FuzzReview57MergedBatch(f *testing.F) {
	for _, a := range r57mSeeds {
		for flags := range uint8(64) {
			f.Add(a, `{"jsonrpc":"2.0","id":"x","result":{}}`, flags)
		}
	}
	f.Fuzz(func(t *testing.T, a, b string, flags uint8) {
		rt := &r57mTransport{a: a, b: b, sseA: flags&1 != 0, sseB: flags&2 != 0}
		opts := &Options{Transport: rt, Logger: discardLogger(), FilterToolsList: flags&16 != 0}
		if flags&8 != 0 {
			opts.Pins = TrustOnFirstUse()
		}
		g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), opts)
		if err != nil {
			t.Fatal(err)
		}
		body := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"x","method":"ping"}]`
		if flags&32 != 0 {
			body = `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"x","method":"ping"}]`
		}
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		if flags&4 != 0 {
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		r57mCheck(t, w, strings.Join([]string{a, b}, " | "))
		if flags&48 == 48 && strings.Contains(w.Body.String(), `{"name":"admin_x"}`) {
			t.Fatalf("a viewer's filtered listing shows an admin tool: %q (%s | %s)", w.Body, a, b)
		}
	})
}
