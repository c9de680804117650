package mcpguard_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The raw HTTP client of the sixteenth review: a hostile client that
// crafts its own requests to a guarded go-sdk Streamable HTTP server, on
// both protocol generations go-sdk v1.8.0 speaks over HTTP: 2026-07-28
// (stateless server, no initialize, the _meta triple and the Mcp-*
// headers on every request) and 2025-11-25 (stateful server, initialize
// and an Mcp-Session-Id).

const (
	r16New = "2026-07-28"
	r16Old = "2025-11-25"
)

var r16Versions = []string{r16New, r16Old}

// r16Tokens authenticates by bearer token: bob is a user, alice an admin.
func r16Tokens() mcpguard.Authenticator {
	return mcpguard.AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
		if ex := req.GetExtra(); ex != nil && ex.Header != nil {
			switch ex.Header.Get("Authorization") {
			case "Bearer bob-token":
				return bob, nil
			case "Bearer alice-token":
				return alice, nil
			}
		}
		return nil, mcpguard.Deny(mcpguard.CodeUnauthenticated, "no valid bearer token")
	})
}

// r16Server is a guarded server on loopback: stateless for the new
// protocol, stateful for the old.
type r16Server struct {
	url  string
	srv  *mcp.Server
	g    *mcpguard.Guard
	sink *memSink
	logs *syncBuffer
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newR16Server builds the server: add registers its tools, cfg is the
// policy, opts the guard's options (Audit and Logger are filled in).
func newR16Server(t *testing.T, version string, add func(*mcp.Server), cfg policy.Config, opts *mcpguard.Options) *r16Server {
	t.Helper()
	s := &r16Server{sink: &memSink{}, logs: &syncBuffer{}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	add(s.srv)
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var o mcpguard.Options
	if opts != nil {
		o = *opts
	}
	if o.Audit == nil {
		o.Audit = s.sink
	}
	if o.Confirmer == nil {
		o.Confirmer = testSigner(t, nil)
	}
	o.Logger = slog.New(slog.NewTextHandler(s.logs, nil))
	if s.g, err = mcpguard.New(pol, r16Tokens(), &o); err != nil {
		t.Fatal(err)
	}
	if err := s.g.Install(s.srv); err != nil {
		t.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{Stateless: version == r16New})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	s.url = hs.URL
	return s
}

// rawClient speaks JSON-RPC over HTTP by hand.
type rawClient struct {
	t       *testing.T
	url     string
	version string
	token   string
	sid     string // the old protocol's session
	id      int
}

// rawAnswer is an HTTP answer: its status and headers, and the JSON-RPC
// response in its body (the one SSE message that is a response, or the
// JSON body).
type rawAnswer struct {
	status int
	header http.Header
	body   []byte // the raw body
	resp   []byte // the JSON-RPC response, as sent
	msg    struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
}

// connect opens a raw client; on the old protocol it initializes a session.
func (s *r16Server) connect(t *testing.T, version, token string) *rawClient {
	t.Helper()
	c := &rawClient{t: t, url: s.url, version: version, token: token}
	if version == r16Old {
		a := c.post("initialize", map[string]any{
			"protocolVersion": r16Old,
			"capabilities":    map[string]any{},
			"clientInfo":      map[string]any{"name": "raw", "version": "1"},
		}, nil)
		if a.status != 200 || a.msg.Error != nil {
			t.Fatalf("initialize: %d %s", a.status, a.body)
		}
		c.sid = a.header.Get("Mcp-Session-Id")
		if c.sid == "" {
			t.Fatal("initialize: no session id")
		}
		c.notify("notifications/initialized", map[string]any{})
		t.Cleanup(func() {
			req, _ := http.NewRequest(http.MethodDelete, c.url, nil)
			req.Header.Set("Mcp-Session-Id", c.sid)
			req.Header.Set("Authorization", "Bearer "+c.token)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	return c
}

// params adds the new protocol's _meta triple to p.
func (c *rawClient) params(p map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range p {
		out[k] = v
	}
	if c.version == r16New {
		meta, _ := out["_meta"].(map[string]any)
		m := map[string]any{}
		for k, v := range meta {
			m[k] = v
		}
		m[mcp.MetaKeyProtocolVersion] = r16New
		m[mcp.MetaKeyClientInfo] = map[string]any{"name": "raw", "version": "1"}
		m[mcp.MetaKeyClientCapabilities] = map[string]any{}
		out["_meta"] = m
	}
	return out
}

// request builds the HTTP request of one JSON-RPC message with the
// headers a conforming client sends; extra headers are added after.
func (c *rawClient) request(body []byte, method, name string, extra http.Header) *http.Request {
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.version == r16New {
		req.Header.Set("Mcp-Protocol-Version", r16New)
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
	} else if c.sid != "" {
		req.Header.Set("Mcp-Protocol-Version", r16Old)
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	for k, vs := range extra {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return req
}

// post sends a request and returns its answer.
func (c *rawClient) post(method string, params map[string]any, extra http.Header) *rawAnswer {
	c.t.Helper()
	c.id++
	return c.postID(c.id, method, params, extra)
}

// postID is post with a given request id.
func (c *rawClient) postID(id int, method string, params map[string]any, extra http.Header) *rawAnswer {
	c.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": c.params(params)}
	body, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	name := ""
	switch method {
	case "tools/call", "prompts/get":
		name, _ = params["name"].(string)
	case "resources/read":
		name, _ = params["uri"].(string)
	}
	return c.send(c.request(body, method, name, extra))
}

// notify sends a notification.
func (c *rawClient) notify(method string, params map[string]any) {
	c.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": c.params(params)})
	a := c.send(c.request(body, method, "", nil))
	if a.status != http.StatusAccepted {
		c.t.Fatalf("%s: status %d %s", method, a.status, a.body)
	}
}

func (c *rawClient) send(req *http.Request) *rawAnswer {
	c.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	a := &rawAnswer{status: resp.StatusCode, header: resp.Header}
	a.body, err = io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	switch {
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		sc := bufio.NewScanner(bytes.NewReader(a.body))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var probe struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal([]byte(data), &probe) == nil && probe.Method == "" && len(probe.ID) > 0 {
				a.resp = []byte(data)
			}
		}
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"):
		a.resp = bytes.TrimSpace(a.body)
	}
	if len(a.resp) > 0 {
		if err := json.Unmarshal(a.resp, &a.msg); err != nil {
			c.t.Fatalf("response %s: %v", a.resp, err)
		}
	}
	return a
}

// callTool sends tools/call.
func (c *rawClient) callTool(name string, args any, extra http.Header) *rawAnswer {
	c.t.Helper()
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	return c.post("tools/call", p, extra)
}

// toolError returns the error object of a tool-error result, or of a
// JSON-RPC error's data.
func (a *rawAnswer) denial(t *testing.T) (code string, retryable bool, corr string) {
	t.Helper()
	var body struct {
		Code          string `json:"code"`
		Retryable     bool   `json:"retryable"`
		CorrelationID string `json:"correlation_id"`
	}
	switch {
	case a.msg.Error != nil:
		if len(a.msg.Error.Data) > 0 {
			_ = json.Unmarshal(a.msg.Error.Data, &body)
		}
	case len(a.msg.Result) > 0:
		var r struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Error json.RawMessage `json:"error"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(a.msg.Result, &r); err != nil {
			t.Fatalf("result %s: %v", a.msg.Result, err)
		}
		if !r.IsError {
			return "", false, ""
		}
		_ = json.Unmarshal(r.StructuredContent.Error, &body)
	}
	return body.Code, body.Retryable, body.CorrelationID
}

func (a *rawAnswer) String() string {
	return strconv.Itoa(a.status) + " " + string(a.body)
}

// rawJSON is an argument object sent exactly as written.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }
