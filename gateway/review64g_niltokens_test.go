package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview64gNilTokenStore: a nil *token.Table "holds no tokens", and New
// refuses a nil Authenticator, but a nil *TokenStore (ParseTokens' result
// when its error went unseen) was taken by New, and every request then
// panicked in TokenStore.Authenticate: net/http broke the connection, the
// client got no answer. New must refuse it, or each request be answered
// (401: the store holds no tokens); TokenStore's methods must not panic.
func TestReview64gNilTokenStore(t *testing.T) {
	var s *gateway.TokenStore
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Errorf("a nil *TokenStore's Authenticate or Len panicked: %v", v)
			}
		}()
		if pr, err := s.Authenticate(context.Background(), "abcdefghijklmnop"); pr != nil || err == nil {
			t.Errorf("a nil *TokenStore's Authenticate = %v, %v; want an error", pr, err)
		}
		_ = s.Len()
	}()
	g, err := gateway.New("http://127.0.0.1:1/mcp", s, &gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return // refused: as good
	}
	w := httptest.NewRecorder()
	r := r64Post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "abcdefghijklmnop")
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("New took a nil *TokenStore, and ServeHTTP panicked: %v", v)
			}
		}()
		g.ServeHTTP(w, r)
	}()
	if w.Code != http.StatusUnauthorized {
		t.Errorf("with a nil *TokenStore: status %d, want 401", w.Code)
	}
}

// TestReview64gZeroPinsRefused: Pins are made by ParsePins or
// TrustOnFirstUse, but New took a zero &gateway.Pins{} (an "empty set", as
// a reader may take it) as Options.Pins, and every tools/list answer then
// panicked in the handler (a write to the zero Pins' nil map): net/http
// broke the connection, and CheckPins failed with "panic serving in
// process". New must refuse it, or the listing be answered.
func TestReview64gZeroPinsRefused(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_order","inputSchema":{"type":"object"}}]}}`))
	}))
	defer up.Close()
	g, err := gateway.New(up.URL+"/mcp", gateway.DemoTokens(), &gateway.Options{Pins: &gateway.Pins{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return // refused: as good
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	r.Header.Set("Authorization", "Bearer admin-token")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	defer func() {
		if v := recover(); v != nil {
			t.Fatalf("New took a zero *Pins, and a tools/list panicked: %v", v)
		}
	}()
	g.ServeHTTP(w, r)
}

// TestReview64NilPointerAuditRefused: a *audit.JSONLSink whose OpenJSONL
// failed, given on as Options.Audit, is a non-nil interface holding a nil
// pointer: every record would fail. New refuses it, naming its type.
func TestReview64NilPointerAuditRefused(t *testing.T) {
	var sink *audit.JSONLSink
	_, err := gateway.New("http://127.0.0.1:1/mcp", gateway.DemoTokens(), &gateway.Options{Audit: sink, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "nil *audit.JSONLSink") {
		t.Errorf("New with a nil *audit.JSONLSink: %v, want an error naming it", err)
	}
}

// TestReview64AuthenticatorPanicAnswered: an Authenticator that panics
// (its bug) went on up to net/http, which dropped the connection: the
// client had no answer, the request no record, unlike a panic of Cost, a
// Transport or a sink. It is refused INTERNAL, 500, recorded, logged.
func TestReview64AuthenticatorPanicAnswered(t *testing.T) {
	sink := &review64Sink{}
	g, err := gateway.New("http://127.0.0.1:1/mcp", gateway.AuthenticatorFunc(func(context.Context, string) (*policy.Principal, error) {
		panic("the authenticator's bug")
	}), &gateway.Options{Audit: sink, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	r := r64Post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_order"}}`, "abcdefghijklmnop")
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("ServeHTTP panicked: %v", v)
			}
		}()
		g.ServeHTTP(w, r)
	}()
	if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "INTERNAL") {
		t.Errorf("answer %d %s, want 500 INTERNAL", w.Code, w.Body)
	}
	if len(sink.events) != 1 || sink.events[0].Code != "INTERNAL" || sink.events[0].Allowed {
		t.Errorf("records %+v, want one INTERNAL refusal", sink.events)
	}
}

// review64Sink keeps the events written to it.
type review64Sink struct {
	mu     sync.Mutex
	events []audit.Event
}

func (s *review64Sink) Write(_ context.Context, e *audit.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, *e)
	return nil
}

// TestReview64AuthenticatorAbortHandlerKept: http.ErrAbortHandler is
// net/http's own way for a handler to break its connection; the
// Authenticator's recover lets it through as itself (as the batch and
// CheckPins paths do), not as a 500.
func TestReview64AuthenticatorAbortHandlerKept(t *testing.T) {
	g, err := gateway.New("http://127.0.0.1:1/mcp", gateway.AuthenticatorFunc(func(context.Context, string) (*policy.Principal, error) {
		panic(http.ErrAbortHandler)
	}), &gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r := r64Post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "abcdefghijklmnop")
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("ServeHTTP recovered %v; want http.ErrAbortHandler raised as itself", v)
		}
	}()
	g.ServeHTTP(httptest.NewRecorder(), r)
}

// r64Post is a POST of body to /mcp with bearer token tok, as an MCP
// client sends it.
func r64Post(body, tok string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	return r
}
