package mcpguard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseRig is a guarded server over the go-sdk's HTTP+SSE transport on
// loopback, its caller the one of FromToken (alice), as a local server a
// client launches and reaches over SSE. sids records the session ids the
// server hands out, as an access log of the POST URLs does.
type sseRig struct {
	url  string
	down *spy
	mu   sync.Mutex
	sids []string
}

// With noServerKey the server's ConnContext starts from a context of its
// own, so that the calls' context lacks http.ServerContextKey (as an
// HTTP/3 server's does): the guard must still see an HTTP request.
func newSSERig(t *testing.T, noServerKey bool) *sseRig {
	t.Helper()
	tokens, err := token.New(map[string]*policy.Principal{"alice-tok": {Subject: "alice", Roles: []string{"user"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := &sseRig{down: &spy{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	addTools(srv, r.down)
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	// Not FromToken, which refuses every call over HTTP+SSE (review25g):
	// an authenticator that lets alice's calls through over SSE.
	alice := tokens.Lookup("alice-tok")
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return &mcpguard.Identity{Principal: alice}, nil
	})
	g, err := mcpguard.New(pol, authn, &mcpguard.Options{
		Audit: &memSink{}, Confirmer: testSigner(t, nil),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if sid := req.URL.Query().Get("sessionid"); sid != "" {
			r.mu.Lock()
			r.sids = append(r.sids, sid)
			r.mu.Unlock()
		}
		h.ServeHTTP(w, req)
	}))
	if noServerKey {
		hs.Config.ConnContext = func(context.Context, net.Conn) context.Context { return context.Background() }
	}
	hs.Start()
	t.Cleanup(hs.Close)
	r.url = hs.URL
	return r
}

func (r *sseRig) sid() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sids) == 0 {
		return ""
	}
	return r.sids[0]
}

// TestReview25fSSESessionConfirmation: the go-sdk's HTTP+SSE transport
// (NewSSEHandler) lets anyone who knows a session id (it is in the query of
// every POST URL) post on the session, and binds no session to a user; its
// calls reach the guard without headers, as a stream's do. The guard took
// such a session for a stream with one client and asked the older
// client's user to confirm: a stranger who posted "accept" ran alice's
// write while she was still being asked. It is refused, as on an unbound
// Streamable HTTP session, and the write does not run.
func TestReview25fSSESessionConfirmation(t *testing.T) {
	for _, noServerKey := range []bool{false, true} {
		t.Run(fmt.Sprintf("noServerKey=%v", noServerKey), func(t *testing.T) {
			review25fSSESessionConfirmation(t, noServerKey)
		})
	}
}

func review25fSSESessionConfirmation(t *testing.T, noServerKey bool) {
	r := newSSERig(t, noServerKey)
	v := &victim{asked: make(chan string, 4), answer: make(chan string, 4)}
	elicit := func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		v.asked <- req.Params.Message
		select {
		case a := <-v.answer:
			return &mcp.ElicitResult{Action: a}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit}).
		Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: r.url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	done := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{"target": "db-1"}})
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		done <- errorCode(t, res)
	}()
	select {
	case <-v.asked:
		sid := r.sid()
		for id := 1; id <= 4; id++ {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"action":"accept","content":{}}}`, id)
			resp, err := http.Post(r.url+"/?sessionid="+sid, "application/json", strings.NewReader(body))
			if err == nil {
				resp.Body.Close()
			}
		}
		time.Sleep(100 * time.Millisecond)
		v.answer <- "decline"
	case got := <-done:
		done <- got
	case <-time.After(5 * time.Second):
		t.Fatal("alice's call never ended")
	}
	if got := <-done; got != "CONFIRMATION_REQUIRED" || r.down.calls.Load() != 0 {
		t.Errorf("a stranger answering on alice's SSE session: alice's call %q, wipe ran %d times; want CONFIRMATION_REQUIRED and no run", got, r.down.calls.Load())
	}
}

// confirmRig is the harness tools, guarded by authn with an Audit sink and
// a Limiter of one call an hour per user, on a go-sdk server.
func confirmRig(t *testing.T, authn mcpguard.Authenticator) (*mcp.Server, *spy, *memSink, *limiter.Limiter) {
	t.Helper()
	down, sink := &spy{}, &memSink{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	addTools(srv, down)
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, authn, &mcpguard.Options{
		Audit: sink, Confirmer: testSigner(t, nil), Limiter: lim,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	return srv, down, sink, lim
}

func r25fTokens(t *testing.T) *token.Table {
	t.Helper()
	tokens, err := token.New(map[string]*policy.Principal{
		"alice-tok": {Subject: "alice", Roles: []string{"user"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// TestReview25fDocumentedAssembliesConfirm: every assembly doc.go
// recommends for stateful Streamable HTTP, and the stream transports,
// still ask an older client (2025-11-25) to confirm, end to end, and its
// "accept" runs the write once: BindSessions with BearerTokens,
// auth.RequireBearerToken with FromTokenInfo, a server behind mcpguard's
// real gateway with FromGatewayHeaders, stdio (in memory) with FromToken.
func TestReview25fDocumentedAssembliesConfirm(t *testing.T) {
	httpSetup := func(authn func(*token.Table) mcpguard.Authenticator, wrap func(*token.Table, http.Handler) http.Handler, viaGateway bool) func(t *testing.T, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, *spy) {
		return func(t *testing.T, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, *spy) {
			tokens := r25fTokens(t)
			srv, down, _, _ := confirmRig(t, authn(tokens))
			var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
			h = wrap(tokens, h)
			hs := httptest.NewServer(h)
			t.Cleanup(hs.Close)
			url := hs.URL
			if viaGateway {
				gw, err := gateway.New(hs.URL, gateway.NewTokenStore(tokens), &gateway.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					t.Fatal(err)
				}
				gs := httptest.NewServer(gw)
				t.Cleanup(gs.Close)
				url = gs.URL + "/mcp"
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit}).
				Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerRT{"alice-tok"}}, MaxRetries: -1},
					&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			return cs, down
		}
	}
	same := func(_ *token.Table, h http.Handler) http.Handler { return h }
	for name, mk := range map[string]func(*testing.T, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, *spy){
		"BindSessions+BearerTokens": httpSetup(mcpguard.BearerTokens, func(tk *token.Table, h http.Handler) http.Handler { return tk.BindSessions(h) }, false),
		"RequireBearerToken+FromTokenInfo": httpSetup(func(*token.Table) mcpguard.Authenticator { return mcpguard.FromTokenInfo(nil) },
			func(tk *token.Table, h http.Handler) http.Handler {
				return auth.RequireBearerToken(tk.Verifier(), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
			}, false),
		"gateway+FromGatewayHeaders": httpSetup(func(*token.Table) mcpguard.Authenticator { return mcpguard.FromGatewayHeaders(nil) }, same, true),
		"in-memory+FromToken": func(t *testing.T, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, *spy) {
			srv, down, _, _ := confirmRig(t, mcpguard.FromToken("alice-tok", r25fTokens(t)))
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ss.Close() })
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit}).
				Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			return cs, down
		},
	} {
		t.Run(name, func(t *testing.T) {
			var asked atomic.Int64
			cs, down := mk(t, answer("accept", &asked))
			res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
			if err != nil {
				t.Fatal(err)
			}
			if asked.Load() != 1 || down.calls.Load() != 1 || res.IsError {
				t.Errorf("asked %d, ran %d, result %s; want asked once and one run", asked.Load(), down.calls.Load(), mustJSON(res))
			}
		})
	}
}

// TestReview25fUnboundRefusalAudited: the refusal on an unbound session
// (BearerTokens without BindSessions, over stateful Streamable HTTP) is
// recorded once, CONFIRMATION_REQUIRED with its detail, and charges
// nothing: with a rate of one call an hour, alice's next call is admitted.
func TestReview25fUnboundRefusalAudited(t *testing.T) {
	srv, down, sink, _ := confirmRig(t, mcpguard.BearerTokens(r25fTokens(t)))
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	var asked atomic.Int64
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: answer("accept", &asked)}).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: bearerRT{"alice-tok"}}, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
	if err != nil {
		t.Fatal(err)
	}
	if errorCode(t, res) != "CONFIRMATION_REQUIRED" || asked.Load() != 0 || down.calls.Load() != 0 {
		t.Fatalf("unbound: %s, asked %d, ran %d", mustJSON(res), asked.Load(), down.calls.Load())
	}
	var recs []string
	for _, e := range sink.all() {
		if e.Tool == "wipe" {
			recs = append(recs, fmt.Sprintf("%s/%s", e.Code, e.Detail))
		}
	}
	if len(recs) != 1 || recs[0] != "CONFIRMATION_REQUIRED/the session is not bound to a verified user" {
		t.Errorf("records of the refusal: %q, want one CONFIRMATION_REQUIRED with the binding detail", recs)
	}
	res, err = call(t, cs, "echo", map[string]any{"text": "x"})
	if err != nil || res.IsError {
		t.Errorf("alice's next call after the refusal: %v %s, want admitted (the refusal charged the rate)", err, mustJSON(res))
	}
	// The limiter does count her calls: the one after is over the rate.
	if res, err = call(t, cs, "echo", map[string]any{"text": "x"}); err != nil || errorCode(t, res) != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("alice's call over the rate: %v %s, want RATE_LIMIT_EXCEEDED", err, mustJSON(res))
	}
}
