package mcpguard_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerRT adds h to every request, as a client that sends them.
type headerRT struct{ h http.Header }

func (rt headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range rt.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// review25hServer is a guarded server with the harness tools and a
// resource that answers with its reader's subject, callers resolved by a.
func review25hServer(t *testing.T, a mcpguard.Authenticator) *mcp.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	addTools(srv, &spy{})
	srv.AddResource(&mcp.Resource{URI: "file:///me", Name: "me"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///me", Text: mcpguard.PrincipalFromContext(ctx).Subject}}}, nil
	})
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, a, &mcpguard.Options{
		Audit: &memSink{}, Confirmer: testSigner(t, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	return srv
}

// review25hCaller reports who a client on tr runs as: at tools/call (the
// whoami tool's subject) and at resources/read (the reader's subject),
// "refused" where the guard refused it.
func review25hCaller(t *testing.T, tr mcp.Transport) (call, read string) {
	t.Helper()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	switch {
	case err != nil:
		t.Fatalf("tools/call: %v", err)
	case res.IsError:
		if got := errorCode(t, res); got != "UNAUTHENTICATED" {
			t.Fatalf("tools/call refused %q, want UNAUTHENTICATED or a run", got)
		}
		call = "refused"
	default:
		call = res.Content[0].(*mcp.TextContent).Text
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///me"})
	if err != nil {
		if we := wireError(err); we == nil || we.Code != -32000 {
			t.Fatalf("resources/read: %v, want -32000 or a read", err)
		}
		read = "refused"
	} else {
		read = rr.Contents[0].Text
	}
	return call, read
}

// TestReview25hAuthenticatorsOverTransports: who each Authenticator of the
// root package says the caller is, over each transport go-sdk v1.8.0 offers
// a server, at tools/call and at resources/read alike. The launching user
// (FromToken: alice, whose token the server holds) is never lent to a
// client over HTTP: Streamable HTTP (its calls carry headers) nor HTTP+SSE
// (none, but they run in an HTTP request's context), whatever HTTP server
// serves it. Before the fix, an HTTP server whose contexts lack
// http.ServerContextKey (quic-go's HTTP/3 server sets only
// http.LocalAddrContextKey; here, net/http with a ConnContext that starts
// from context.Background, after which net/http sets LocalAddrContextKey
// still) let every network client of an HTTP+SSE server run as alice, with
// her token as its credential. The clients over HTTP send bob's token and a
// forged gateway subject, carol.
func TestReview25hAuthenticatorsOverTransports(t *testing.T) {
	tokens, err := token.New(map[string]*policy.Principal{
		"alice-tok": {Subject: "alice", Roles: []string{"user"}},
		"bob-tok":   {Subject: "bob", Roles: []string{"user"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: headerRT{http.Header{
		"Authorization": {"Bearer bob-tok"}, token.HeaderSubject: {"carol"},
	}}}
	handler := map[string]func(*mcp.Server) http.Handler{
		"streamable": func(s *mcp.Server) http.Handler {
			return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
		},
		"streamable_stateless": func(s *mcp.Server) http.Handler {
			return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
		},
		"streamable_require_bearer": func(s *mcp.Server) http.Handler {
			return auth.RequireBearerToken(tokens.Verifier(), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(
				mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		},
		"sse": func(s *mcp.Server) http.Handler {
			return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
		},
		"sse_no_server_context_key": func(s *mcp.Server) http.Handler {
			return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
		},
	}
	// connect serves srv over transport and returns a client transport to it.
	connect := func(t *testing.T, srv *mcp.Server, transport string) mcp.Transport {
		switch transport {
		case "in_memory":
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ss.Close() })
			return ct
		case "io_over_tcp":
			// A transport of the server's own: newline-delimited JSON-RPC
			// on a socket, which the guard cannot tell from stdio.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_ = srv.Run(context.Background(), &mcp.IOTransport{Reader: c, Writer: c})
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			return &mcp.IOTransport{Reader: c, Writer: c}
		}
		hs := httptest.NewUnstartedServer(handler[transport](srv))
		if transport == "sse_no_server_context_key" {
			hs.Config.ConnContext = func(context.Context, net.Conn) context.Context { return context.Background() }
		}
		hs.Start()
		t.Cleanup(hs.Close)
		if transport == "sse" || transport == "sse_no_server_context_key" {
			return &mcp.SSEClientTransport{Endpoint: hs.URL, HTTPClient: hc}
		}
		return &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: hc}
	}
	authns := map[string]func() mcpguard.Authenticator{
		"FromToken":          func() mcpguard.Authenticator { return mcpguard.FromToken("alice-tok", tokens) },
		"BearerTokens":       func() mcpguard.Authenticator { return mcpguard.BearerTokens(tokens) },
		"FromTokenInfo":      func() mcpguard.Authenticator { return mcpguard.FromTokenInfo(nil) },
		"FromGatewayHeaders": func() mcpguard.Authenticator { return mcpguard.FromGatewayHeaders(&policy.Principal{Subject: "anon"}) },
	}
	// want: authenticator, then transport, then the caller (or "refused").
	want := map[string]map[string]string{
		"FromToken": {
			"in_memory": "alice", "io_over_tcp": "alice", // documented: not told from stdio
			"streamable": "refused", "streamable_stateless": "refused", "streamable_require_bearer": "refused",
			"sse": "refused", "sse_no_server_context_key": "refused",
		},
		"BearerTokens": {
			"in_memory": "refused", "io_over_tcp": "refused",
			"streamable": "bob", "streamable_stateless": "bob", "streamable_require_bearer": "bob",
			"sse": "refused", "sse_no_server_context_key": "refused",
		},
		"FromTokenInfo": {
			"in_memory": "refused", "io_over_tcp": "refused",
			"streamable": "refused", "streamable_stateless": "refused", "streamable_require_bearer": "bob",
			"sse": "refused", "sse_no_server_context_key": "refused",
		},
		// Sound only where nothing but the gateway reaches the server; a
		// transport without headers gets the anonymous principal.
		"FromGatewayHeaders": {
			"in_memory": "anon", "io_over_tcp": "anon",
			"streamable": "carol", "streamable_stateless": "carol", "streamable_require_bearer": "carol",
			"sse": "anon", "sse_no_server_context_key": "anon",
		},
	}
	for an, transports := range want {
		for tn, w := range transports {
			t.Run(an+"/"+tn, func(t *testing.T) {
				srv := review25hServer(t, authns[an]())
				call, read := review25hCaller(t, connect(t, srv, tn))
				wantCall := w
				switch w {
				case "alice":
					wantCall = "alice alice-tok" // whoami: subject and credential
				case "bob":
					wantCall = "bob bob-tok"
				case "anon", "carol":
					wantCall = w + " " // no credential
				}
				if diff := cmp.Diff([2]string{wantCall, w}, [2]string{call, read}); diff != "" {
					t.Errorf("%s over %s: [tools/call, resources/read] (-want +got):\n%s", an, tn, diff)
				}
			})
		}
	}
}
