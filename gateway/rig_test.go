package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorded is one request as the downstream received it.
type recorded struct {
	Method string
	Host   string
	Header http.Header
	Body   string
}

// downstream is a recording stand-in for an MCP server that trusts everyone:
// any request that reaches it proves the gateway let it through.
type downstream struct {
	mu       sync.Mutex
	received []recorded
	// release, when non-nil, gates the second event of the "stream" tool.
	release chan struct{}
}

func (d *downstream) log() []recorded {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]recorded(nil), d.received...)
}

// bodies returns the bodies received, in order.
func (d *downstream) bodies() []string {
	var out []string
	for _, r := range d.log() {
		out = append(out, r.Body)
	}
	return out
}

func (d *downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d.mu.Lock()
	d.received = append(d.received, recorded{Method: r.Method, Host: r.Host, Header: r.Header.Clone(), Body: string(body)})
	d.mu.Unlock()
	if r.Method != http.MethodPost {
		w.Header().Set("Mcp-Session-Id", r.Header.Get("Mcp-Session-Id"))
		w.WriteHeader(http.StatusOK)
		return
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		http.Error(w, "downstream: not a single JSON object", http.StatusBadRequest)
		return
	}
	id, hasID := msg["id"]
	var method string
	json.Unmarshal(msg["method"], &method)
	if !hasID || method == "" {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var params struct {
		Name string `json:"name"`
	}
	json.Unmarshal(msg["params"], &params)
	var result string
	switch {
	case method == "tools/list":
		result = `{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"},{"name":"trigger_refund"}]}`
	case params.Name == "slow":
		time.Sleep(time.Second)
		result = `{"slow":true}`
	case params.Name == "stream" || method == "tools/list" && r.URL.Query().Get("sse") != "":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
		w.(http.Flusher).Flush()
		if d.release != nil {
			select {
			case <-d.release:
			case <-r.Context().Done(): // the gateway gave up on the stream
				return
			}
		}
		io.WriteString(w, "id: 2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(id)+",\"result\":{\"done\":true}}\n\n")
		return
	default:
		result = `{"method":` + string(msg["method"]) + `,"tool":"` + params.Name + `"}`
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Mcp-Session-Id", "sess-1")
	w.Header().Set("Keep-Alive", "timeout=5")
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":`+result+`}`)
}

// rig is a gateway in front of a recording downstream, both on loopback.
type rig struct {
	url  string // the gateway's base URL
	gw   *httptest.Server
	down *downstream
	dsrv *httptest.Server
	logs *bytes.Buffer
}

func newRig(t *testing.T, opts *Options) *rig {
	t.Helper()
	d := &downstream{}
	dsrv := httptest.NewServer(d)
	t.Cleanup(dsrv.Close)
	var o Options
	if opts != nil {
		o = *opts
	}
	logs := &bytes.Buffer{}
	var mu sync.Mutex
	o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, logs}, nil))
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &o)
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)
	return &rig{url: gw.URL, gw: gw, down: d, dsrv: dsrv, logs: logs}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// syncLog is a log written and read under its lock: a gateway's, read by
// a test while the gateway writes it.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor waits up to 3 s for a line holding every one of subs (the
// gateway logs some lines after its answer is relayed) and reports whether
// one came.
func (l *syncLog) waitFor(subs ...string) bool {
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		for line := range strings.SplitSeq(l.String(), "\n") {
			all := true
			for _, s := range subs {
				all = all && strings.Contains(line, s)
			}
			if all {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

type reply struct {
	status int
	header http.Header
	body   string
}

// post sends body to the gateway with the given Authorization (none if
// empty) and extra headers.
func (rg *rig) post(t *testing.T, auth, body string, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, rg.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// rpcErr decodes a single error response.
func rpcErr(t *testing.T, body string) (id json.RawMessage, code int, data map[string]any) {
	t.Helper()
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int            `json:"code"`
			Data map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("response %q is not JSON: %v", body, err)
	}
	return m.ID, m.Error.Code, m.Error.Data
}

const (
	viewer = "Bearer viewer-token"
	admin  = "Bearer admin-token"
)

func call(id, tool, args string) string {
	if args == "" {
		args = "{}"
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// unsetenv removes an environment variable for the rest of the test (after
// t.Setenv has registered its restoration).
func unsetenv(t *testing.T, name string) {
	t.Helper()
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}
