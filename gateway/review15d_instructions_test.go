package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nullInstructions wraps h, a go-sdk handler in JSON mode, so that the
// instructions of its answers are JSON null (which go-sdk and Python
// clients read as none), as a hand-written server may send them.
func nullInstructions(h http.Handler, on *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if on.Load() {
			body = bytes.Replace(body, []byte(`"instructions":"`+goodInstructions+`"`), []byte(`"instructions":null`), 1)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}

// TestPinsInstructionsNull: instructions given as JSON null have a digest
// like any other value. ToolDigest gives "" for null: trust on first use
// pinned "" as their digest, and the pins it wrote (what --print-pins
// prints) were refused by ParsePins; with a fixed set, null instructions
// that are not the approved ones were withheld without a record (the
// change was never "first").
func TestPinsInstructionsNull(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var null atomic.Bool
	null.Store(true)
	down := newServer(t, nullInstructions(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return instructedServer(goodInstructions) },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}), &null))

	tofu := TrustOnFirstUse()
	g, err := New(down.URL, DemoTokens(), &Options{Pins: tofu, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	connect(t, ctx, newServer(t, g).URL+"/mcp", "admin-token")
	data, err := json.Marshal(tofu)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), InstructionsPin) {
		t.Fatalf("null instructions not pinned: %s", data)
	}
	if _, err := ParsePins(data); err != nil {
		t.Errorf("the pins trust on first use wrote do not parse: %v", err)
	}

	d, _ := json.Marshal(goodInstructions)
	fixed, err := ParsePins([]byte(`{"` + InstructionsPin + `":"` + ToolDigest(d) + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err = New(down.URL, DemoTokens(), &Options{Pins: fixed, Audit: sink, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	connect(t, ctx, gw.URL+"/mcp", "admin-token")
	if n := len(sink.outcomes(InstructionsPin)); n != 1 {
		t.Errorf("%d records of null instructions against a fixed set, want 1", n)
	}
	null.Store(false)
	if got := connect(t, ctx, gw.URL+"/mcp", "admin-token").InitializeResult().Instructions; got != goodInstructions {
		t.Errorf("approved instructions after null ones: %q", got)
	}
}

// TestPinsInstructionsNotCallable: the pin of the instructions is not a
// tool's. A fixed set (as --print-pins writes it, with #instructions)
// refuses the calls of every tool it does not name, and so a call of a
// tool named #instructions, which no listing showed and nobody approved:
// it reached the downstream.
func TestPinsInstructionsNotCallable(t *testing.T) {
	var calls atomic.Int32
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte("tools/call")) {
			calls.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ran"}]}}`)
	}))
	d, _ := json.Marshal(goodInstructions)
	pins, err := ParsePins([]byte(`{"` + InstructionsPin + `":"` + ToolDigest(d) + `","get_customer_record":"` + ToolDigest(json.RawMessage(goodTool)) + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(down.URL, DemoTokens(), &Options{Pins: pins, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	for _, tc := range []struct{ name, body string }{
		{"single", call(`1`, InstructionsPin, `{}`)},
		{"batch", `[` + call(`1`, InstructionsPin, `{}`) + `]`},
	} {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(tc.body))
		req.Header.Set("Authorization", admin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if n := calls.Swap(0); n != 0 || !strings.Contains(string(body), "TOOL_NOT_PINNED") {
			t.Errorf("%s: a call of %s reached the downstream %d times; answered %d %s", tc.name, InstructionsPin, n, resp.StatusCode, body)
		}
	}
}

// TestPinsInstructionsEmptyFirst: with trust on first use, instructions
// first given as "" are pinned as such (not taken for none): text that
// follows is withheld and recorded, the result left valid JSON whatever
// the place of the member dropped.
func TestPinsInstructionsEmptyFirst(t *testing.T) {
	var result atomic.Pointer[string]
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":`+*result.Load()+`}`)
	}))
	sink := &memSink{}
	g, err := New(down.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Audit: sink, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	for i, res := range []string{
		`{"capabilities":{},"instructions":""}`,
		`{"instructions":"` + badInstructions + `"}`,
		`{"instructions":"` + badInstructions + `","capabilities":{}}`,
		`{"capabilities":{},"instructions":"` + badInstructions + `"}`,
		`{"capabilities":{},"instructions":"` + badInstructions + `","serverInfo":{"name":"x","version":"1"}}`,
	} {
		result.Store(&res)
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Authorization", admin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var m struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(body, &m); err != nil || m.Result == nil {
			t.Fatalf("answer %d: %d %s (%v)", i, resp.StatusCode, body, err)
		}
		if _, has := m.Result["instructions"]; has != (i == 0) {
			t.Errorf("answer %d: %s", i, body)
		}
	}
	if n := len(sink.outcomes(InstructionsPin)); n != 1 {
		t.Errorf("%d records of the changed instructions, want 1", n)
	}
}
