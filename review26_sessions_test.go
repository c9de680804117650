package mcpguard_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessopenLateRT is a go-sdk client's transport that sends no token on the
// request that opens a session (the one without an Mcp-Session-Id: its
// initialize) and the bearer token on every later one, as a client that
// signs in lazily does, or one handed a session id someone else opened.
type sessopenLateRT struct{ token string }

func (b sessopenLateRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if r.Header.Get("Mcp-Session-Id") != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	} else {
		r.Header.Del("Authorization")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// sessopenOptionalBearer wraps h so that a request with a bearer token goes
// through auth.RequireBearerToken with tokens' verifier and one without
// passes to h unchanged, as token.Table.BindSessions does for the guard's
// own tokens.
func sessopenOptionalBearer(tokens *token.Table, h http.Handler) http.Handler {
	strict := auth.RequireBearerToken(tokens.Verifier(), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := token.Bearer(r.Header); ok {
			strict.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// sessopenServer serves the harness tools over stateful Streamable HTTP on
// loopback, wrapped by wrap; with install the guard is installed on the
// server (with authn), else the confirmed tool "wipe" is a raw handler the
// guard wraps ([Guard.Wrap]). alice-tok is alice, bob-tok is bob.
func sessopenServer(t *testing.T, install bool, authn func(*token.Table) mcpguard.Authenticator, wrap func(*token.Table, http.Handler) http.Handler) (url string, down *spy) {
	t.Helper()
	tokens, err := token.New(map[string]*policy.Principal{
		"alice-tok": {Subject: "alice", Roles: []string{"user"}},
		"bob-tok":   {Subject: "bob", Roles: []string{"user"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	down = &spy{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, authn(tokens), &mcpguard.Options{
		Audit: &memSink{}, Confirmer: testSigner(t, nil),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if install {
		addTools(srv, down)
		if err := g.Install(srv); err != nil {
			t.Fatal(err)
		}
	} else {
		tool := &mcp.Tool{Name: "wipe", InputSchema: map[string]any{
			"type": "object", "properties": map[string]any{"target": map[string]any{"type": "string"}},
			"required": []any{"target"}, "additionalProperties": false,
		}}
		h, err := g.Wrap(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			down.calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		srv.AddTool(tool, h)
	}
	hs := httptest.NewServer(wrap(tokens, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(hs.Close)
	return hs.URL, down
}

func sessopenBind(tk *token.Table, h http.Handler) http.Handler { return tk.BindSessions(h) }

// TestReview26SessionOpenedWithoutToken: over stateful Streamable HTTP a
// session opened (initialize) without a token is bound to no user by
// go-sdk v1.8.0, whatever tokens its later requests carry; so anyone who
// learns its id, with no token or with another user's, can post on it the
// answer to the question an older client's user is asked. The guard
// asked alice to confirm there, as her call carried her verified user,
// and bob's (or a tokenless caller's) forged "accept" ran her write while
// she was still being asked. The guard must not ask on such a session,
// whether it is installed or wraps the tool: alice's call is refused and
// the write does not run.
func TestReview26SessionOpenedWithoutToken(t *testing.T) {
	fromTokenInfo := func(*token.Table) mcpguard.Authenticator { return mcpguard.FromTokenInfo(nil) }
	for _, tc := range []struct {
		name    string
		install bool
		authn   func(*token.Table) mcpguard.Authenticator
		wrap    func(*token.Table, http.Handler) http.Handler
	}{
		{"install_bindsessions_bearertokens", true, mcpguard.BearerTokens, sessopenBind},
		{"install_optional_requirebearertoken_fromtokeninfo", true, fromTokenInfo, sessopenOptionalBearer},
		{"wrap_bindsessions_bearertokens", false, mcpguard.BearerTokens, sessopenBind},
	} {
		for _, forger := range []string{"", "bob-tok"} {
			t.Run(tc.name+"/forger="+map[string]string{"": "no_token", "bob-tok": "bob"}[forger], func(t *testing.T) {
				url, down := sessopenServer(t, tc.install, tc.authn, tc.wrap)
				alice := connectVictim(t, url, sessopenLateRT{"alice-tok"})
				sid := alice.cs.ID()
				if sid == "" {
					t.Fatal("no session id")
				}
				done := make(chan string, 1)
				go func() {
					res, err := alice.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{"target": "db-1"}})
					if err != nil {
						done <- "error: " + err.Error()
						return
					}
					done <- errorCode(t, res)
				}()
				select {
				case <-alice.asked:
					// The forged answers race alice's own, which comes after.
					forgeAccepts(t, url, sid, forger)
					alice.answer <- "decline"
				case got := <-done:
					done <- got
				case <-time.After(5 * time.Second):
					t.Fatal("alice's call never ended")
				}
				if got := <-done; got != "CONFIRMATION_REQUIRED" || down.calls.Load() != 0 {
					t.Errorf("forged accept on alice's session opened without a token: alice's call %q, wipe ran %d times; want CONFIRMATION_REQUIRED and no run", got, down.calls.Load())
				}
			})
		}
	}
}

// TestReview26WrapAsksNoOlderClientOverHTTP: a guard that is not installed
// on the server (a handler it wraps) sees no session opened, so it cannot
// tell a bound one: over stateful Streamable HTTP it refuses an older
// client's confirmed call, CONFIRMATION_REQUIRED, without asking, even on
// a session BindSessions bound to alice (doc.go, "Sessions over HTTP").
func TestReview26WrapAsksNoOlderClientOverHTTP(t *testing.T) {
	url, down := sessopenServer(t, false, mcpguard.BearerTokens, sessopenBind)
	var asked atomic.Int64
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: answer("decline", &asked)}).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerRT{"alice-tok"}}, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != "CONFIRMATION_REQUIRED" || asked.Load() != 0 || down.calls.Load() != 0 {
		t.Errorf("wrapped tool on a bound session: %q, asked %d times, ran %d; want CONFIRMATION_REQUIRED, not asked, no run", got, asked.Load(), down.calls.Load())
	}
}

// TestReview26ConcurrentSessions: sessions opened at once, some with
// alice's token and some without (her later requests carrying it): each
// bound one is asked and its "accept" runs the write once; each other is
// refused without asking. Run with -race, this also exercises the record
// of who opened each session.
func TestReview26ConcurrentSessions(t *testing.T) {
	url, down := sessopenServer(t, true, mcpguard.BearerTokens, sessopenBind)
	const n = 4
	type outcome struct {
		bound bool
		code  string
		asked int64
	}
	out := make(chan outcome, 2*n)
	for i := 0; i < 2*n; i++ {
		bound := i%2 == 0
		go func() {
			var rt http.RoundTripper = bearerRT{"alice-tok"}
			if !bound {
				rt = sessopenLateRT{"alice-tok"}
			}
			var asked atomic.Int64
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: answer("accept", &asked)}).
				Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1},
					&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				out <- outcome{bound, "connect: " + err.Error(), 0}
				return
			}
			defer cs.Close()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{"target": "db-1"}})
			if err != nil {
				out <- outcome{bound, "error: " + err.Error(), asked.Load()}
				return
			}
			out <- outcome{bound, errorCode(t, res), asked.Load()}
		}()
	}
	for i := 0; i < 2*n; i++ {
		select {
		case o := <-out:
			want := outcome{o.bound, "", 1}
			if !o.bound {
				want = outcome{o.bound, "CONFIRMATION_REQUIRED", 0}
			}
			if o != want {
				t.Errorf("session bound=%v: got code %q asked %d, want %q asked %d", o.bound, o.code, o.asked, want.code, want.asked)
			}
		case <-time.After(8 * time.Second):
			t.Fatal("a call never ended")
		}
	}
	if got := down.calls.Load(); got != n {
		t.Errorf("wipe ran %d times, want %d (once per bound session)", got, n)
	}
}
