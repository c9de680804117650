package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearerRT adds a bearer token to every request of a go-sdk client.
type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// confirmHTTPServer serves the harness tools, guarded, over Streamable
// HTTP on loopback; "bob-token" and "alice-token" authenticate bob and
// alice from the request's header.
func confirmHTTPServer(t *testing.T, stateless bool) (url string, down *spy) {
	t.Helper()
	down = &spy{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	addTools(srv, down)
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	authn := mcpguard.AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
		if ex := req.GetExtra(); ex != nil && ex.Header != nil {
			switch ex.Header.Get("Authorization") {
			case "Bearer bob-token":
				return bob, nil
			case "Bearer alice-token":
				return alice, nil
			}
		}
		return nil, mcpguard.ErrUnauthenticated
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
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(hs.Close)
	return hs.URL, down
}

func httpClient(t *testing.T, url, token, version string, co clientOpts) *mcp.ClientSession {
	t.Helper()
	copts := &mcp.ClientOptions{ElicitationHandler: co.elicit}
	if co.noMRTR {
		copts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
		if version == "" || version >= "2026-07-28" {
			copts.Capabilities = elicitCaps()
		}
	}
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerRT{token}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "1"}, copts).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestConfirmationOverStreamableHTTP runs the confirmation with a real
// go-sdk client over Streamable HTTP, stateful and stateless, on both
// protocol generations: an accepted call runs once after one question; a
// declined one never runs. Where the server cannot put the question to the
// client (stateless HTTP has no channel for the older protocol's
// elicitation) or will not (a stateful session bound to no verified user,
// on which anyone could answer it), the call is refused and does not run.
func TestConfirmationOverStreamableHTTP(t *testing.T) {
	for _, mode := range []string{"stateful", "stateless"} {
		for _, v := range protocolVersions {
			t.Run(mode+"/"+versionName(v), func(t *testing.T) {
				for _, action := range []string{"accept", "decline"} {
					url, down := confirmHTTPServer(t, mode == "stateless")
					var asked atomic.Int64
					cs := httpClient(t, url, "bob-token", v, clientOpts{elicit: answer(action, &asked)})
					res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
					if err != nil {
						t.Fatalf("%s: %v", action, err)
					}
					code := errorCode(t, res)
					// Since 3851d36 an older client is not asked on a
					// session bound to no verified user (this server's
					// authenticator reads a header; see "Sessions over
					// HTTP"), nor can it be over stateless HTTP: only a
					// client on 2026-07-28 or later is asked here.
					wantAsked := int64(0)
					if cs.InitializeResult().ProtocolVersion >= "2026-07-28" {
						wantAsked = 1
					}
					if asked.Load() != wantAsked {
						t.Errorf("%s on protocol %s: asked %d times, want %d", action, cs.InitializeResult().ProtocolVersion, asked.Load(), wantAsked)
					}
					switch {
					case asked.Load() == 0:
						if code != "CONFIRMATION_REQUIRED" || down.calls.Load() != 0 {
							t.Errorf("%s, never asked: code %q, tool ran %d times; want CONFIRMATION_REQUIRED and no run", action, code, down.calls.Load())
						}
					case action == "accept":
						if code != "" || asked.Load() != 1 || down.calls.Load() != 1 {
							t.Errorf("accept: code %q, asked %d times, tool ran %d times; want success after one question: %s", code, asked.Load(), down.calls.Load(), mustJSON(res))
						}
					default:
						if code != "CONFIRMATION_REQUIRED" || down.calls.Load() != 0 {
							t.Errorf("decline: code %q, tool ran %d times; want CONFIRMATION_REQUIRED and no run", code, down.calls.Load())
						}
					}
					t.Logf("%s: asked %d, code %q, protocol %s", action, asked.Load(), code, cs.InitializeResult().ProtocolVersion)
				}
			})
		}
	}
}

// TestConfirmationStateAcrossUsersOverHTTP: a state bob's client was given
// (new protocol, the client driving the rounds by hand) is worthless to
// alice, whatever she answers and however she spells the arguments, and
// her attempts leave it to bob, as does his own with the state respelt; bob's use runs the tool once, and the
// state is then spent, also for a retry from a new session. Stateless HTTP:
// go-sdk v1.8.0 negotiates 2025-11-25 on stateful HTTP, where the state
// never leaves the server.
func TestConfirmationStateAcrossUsersOverHTTP(t *testing.T) {
	url, down := confirmHTTPServer(t, true)
	bobCS := httpClient(t, url, "bob-token", "2026-07-28", clientOpts{noMRTR: true})
	aliceCS := httpClient(t, url, "alice-token", "2026-07-28", clientOpts{noMRTR: true})
	args := json.RawMessage(`{"target":"db-1"}`)
	ask, err := bobCS.CallTool(context.Background(), &mcp.CallToolParams{Name: "wipe", Arguments: args})
	if err != nil || !ask.NeedsInput() || ask.RequestState == "" {
		t.Fatalf("bob's first round: %v %s", err, mustJSON(ask))
	}
	accept := mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept"}}
	second := func(cs *mcp.ClientSession, args json.RawMessage, state string) string {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wipe", Arguments: args, RequestState: state, InputResponses: accept})
		if err != nil {
			return "error: " + err.Error()
		}
		return errorCode(t, res)
	}
	for _, a := range []string{`{"target":"db-1"}`, `{ "target" : "db-1" }`, `{"target":"db-\u0031"}`} {
		if got := second(aliceCS, json.RawMessage(a), ask.RequestState); got != "CONFIRMATION_REQUIRED" {
			t.Errorf("alice with bob's state and %s: %q, want CONFIRMATION_REQUIRED", a, got)
		}
	}
	if got := second(bobCS, json.RawMessage(`{"target":"db-2"}`), ask.RequestState); got != "CONFIRMATION_REQUIRED" {
		t.Errorf("bob's state for other arguments: %q, want CONFIRMATION_REQUIRED", got)
	}
	if got := second(bobCS, args, strings.ReplaceAll(ask.RequestState, ".", "\r\n.")); got != "CONFIRMATION_REQUIRED" {
		t.Errorf("bob's state respelt with a line break: %q, want CONFIRMATION_REQUIRED", got)
	}
	if down.calls.Load() != 0 {
		t.Fatalf("tool ran %d times before bob's own confirmed round", down.calls.Load())
	}
	if got := second(bobCS, json.RawMessage(`{"target":"db-1"}`), ask.RequestState); got != "" {
		t.Fatalf("bob's confirmed round: %q, want success", got)
	}
	again := httpClient(t, url, "bob-token", "2026-07-28", clientOpts{noMRTR: true})
	if got := second(again, args, ask.RequestState); got != "CONFIRMATION_REQUIRED" {
		t.Errorf("bob's spent state from a new session: %q, want CONFIRMATION_REQUIRED", got)
	}
	if n := down.calls.Load(); n != 1 {
		t.Errorf("tool ran %d times, want 1", n)
	}
}
