package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goSDKRejected is the code of the go-sdk's jsonrpc2.ErrRejected ("rejected
// by transport").
const goSDKRejected = -32005

// TestReview59dGoSDKSeesStatusOnly holds the package doc's "Errors" to what
// a go-sdk (v1.8.0) client connected through the gateway reports. The doc
// said that it reports -32003 as mcp.ErrConnectionClosed, with the gateway's
// message in the text; it does not: it takes 429, 500, 502, 503 and 504 for
// transient failures of its transport and reports the status text alone
// ("rejected by transport: ... Bad Gateway", a *jsonrpc.Error of code
// goSDKRejected), without the gateway's JSON-RPC error, which it reads
// under 403.
func TestReview59dGoSDKSeesStatusOnly(t *testing.T) {
	get := &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"customer_id": "CUST-00001"}}
	for _, c := range []struct {
		name, status string
		limit        bool // a rate of one call an hour; else the downstream goes
	}{
		{"429", "Too Many Requests", true},
		{"502", "Bad Gateway", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			down, gw := sdkBehindGateway(t, &Options{Logger: discardLogger()}, c.limit)
			cs := connect(t, ctx, gw.URL+"/mcp", "viewer-token")

			// 403: the JSON-RPC error is read.
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "admin_reset_key", Arguments: map[string]any{"key_id": "K"}})
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != CodeForbidden {
				t.Errorf("403: %v, want the JSON-RPC error %d", err, CodeForbidden)
			}
			if c.limit {
				if _, err := cs.CallTool(ctx, get); err != nil {
					t.Fatalf("the first call: %v", err)
				}
			} else {
				down.Close()
			}
			_, err = cs.CallTool(ctx, get)
			switch {
			case err == nil:
				t.Fatal("the call succeeded")
			case errors.Is(err, mcp.ErrConnectionClosed),
				errors.As(err, &je) && (je.Code == CodeUpstreamUnavailable || je.Code == CodeLimitExceeded):
				t.Errorf("%s: %v: the go-sdk read the gateway's JSON-RPC error after all; the package doc's Errors says it does not", c.name, err)
			case !errors.As(err, &je) || je.Code != goSDKRejected || !strings.Contains(err.Error(), c.status):
				t.Errorf("%s: %v, want the go-sdk's %d (rejected by transport) with the status text %q", c.name, err, goSDKRejected, c.status)
			}
		})
	}
}

// principalSeen is a Transport that records the subject PrincipalFromContext
// gives for each request it sends, by HTTP method.
type principalSeen struct {
	mu   sync.Mutex
	seen []string
	next http.RoundTripper
}

func (p *principalSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	s := "<nil>"
	if pr := PrincipalFromContext(r.Context()); pr != nil {
		s = pr.Subject
	}
	p.mu.Lock()
	p.seen = append(p.seen, r.Method+" "+s)
	p.mu.Unlock()
	return p.next.RoundTrip(r)
}

func (p *principalSeen) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.seen
	p.seen = nil
	return out
}

// TestReview59dPrincipalFromContext checks PrincipalFromContext's doc: a
// custom Transport finds the principal the gateway authenticated in the
// context of every request it forwards (a POST, each member of a batch, a
// GET stream, a DELETE, and CheckPins' listing as its caller), and nil in
// another context.
func TestReview59dPrincipalFromContext(t *testing.T) {
	if PrincipalFromContext(context.Background()) != nil {
		t.Error("a principal in a background context")
	}
	var resets atomic.Int64
	srv := sdkServer(&resets)
	down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	tr := &principalSeen{next: NewTransport()}
	g, err := New(down.URL, DemoTokens(), &Options{Logger: discardLogger(), Transport: tr, Pins: TrustOnFirstUse()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.CheckPins(context.Background(), &policy.Principal{Subject: "lister", Roles: []string{"admin"}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range tr.take() {
		if !strings.HasSuffix(s, " lister") {
			t.Errorf("CheckPins' request %q: want the caller lister", s)
		}
	}
	gw := newServer(t, g)
	send := func(method, body string) {
		req, _ := http.NewRequest(method, gw.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	send(http.MethodPost, call("1", "get_customer_record", `{"customer_id":"CUST-00001"}`))
	send(http.MethodPost, "["+call("2", "get_customer_record", `{"customer_id":"A"}`)+","+call("3", "get_customer_record", `{"customer_id":"B"}`)+"]")
	send(http.MethodGet, "")
	send(http.MethodDelete, "")
	got := tr.take()
	if len(got) != 5 {
		t.Errorf("the Transport saw %q, want 5 requests (POST, two members, GET, DELETE)", got)
	}
	for _, s := range got {
		if !strings.HasSuffix(s, " viewer") {
			t.Errorf("request %q: want the principal viewer", s)
		}
	}
}

// TestReview59dLoggerSource holds Options.Logger's doc to the lines that
// carry no source location under a handler's AddSource. The doc said "the
// lines of allowed requests" carry none; a batch's "upstream" line, the
// "allow" line of a GET or DELETE, and the "upstream" line of a listing
// the gateway filters did (source=.../gateway/batch.go:80): only the two
// lines of a single POST relayed as it came, the decision and the
// upstream's answer, are written without one.
func TestReview59dLoggerSource(t *testing.T) {
	var logs syncLog
	d := &downstream{}
	ds := newServer(t, d)
	g, err := New(ds.URL+"/mcp", DemoTokens(), &Options{FilterToolsList: true,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{AddSource: true}))})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	rg.post(t, viewer, call("1", "get_customer_record", ""))
	if !logs.waitFor("msg=upstream", "status=200") {
		t.Fatalf("no upstream line; logs:\n%s", logs.String())
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "source=") {
			t.Errorf("a single call's line has a source location: %s", l)
		}
	}
	n := len(logs.String())
	rg.post(t, viewer, "["+call("2", "get_customer_record", "")+"]")
	rg.post(t, viewer, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if !logs.waitFor("filtered=true") || !logs.waitFor("forwarded=1") {
		t.Fatalf("no batch or listing line; logs:\n%s", logs.String())
	}
	if !strings.Contains(logs.String()[n:], "source=") {
		t.Errorf("a batch's or a filtered listing's line without a source location: the doc says they have one; logs:\n%s", logs.String()[n:])
	}
}
