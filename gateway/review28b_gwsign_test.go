package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// sessionSwap stands for someone on the network between the gateway and
// the downstream who moves a signed request into another session.
type sessionSwap struct {
	rt http.RoundTripper
	to string // "": the request is passed on as signed
}

func (s sessionSwap) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.to != "" {
		r = r.Clone(r.Context())
		r.Header.Set(hdrSession, s.to)
	}
	return s.rt.RoundTrip(r)
}

// TestReview28bSignedSession: the gateway signs the session a request runs
// in (it let the principal use only that one), so a downstream that
// verifies takes the request in that session and refuses it moved to
// another one on the way.
func TestReview28bSignedSession(t *testing.T) {
	signer, err := token.NewGatewaySigner(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	var reached []string
	down := httptest.NewServer(signer.Verify(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.Header.Get(hdrSession))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}), &token.GatewayVerifyOptions{Logger: slog.New(slog.DiscardHandler)}))
	defer down.Close()
	for _, to := range []string{"", "sess-someone-else"} {
		reached = nil
		g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Signer: signer,
			Transport: sessionSwap{rt: NewTransport(), to: to}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer viewer-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(hdrSession, "sess-review28b")
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		if to == "" && (w.Code != http.StatusOK || len(reached) != 1 || reached[0] != "sess-review28b") {
			t.Errorf("as signed: %d %s; the downstream got sessions %q", w.Code, w.Body, reached)
		}
		if to != "" && len(reached) != 0 {
			t.Errorf("moved to %s: %d %s; the downstream took it in sessions %q", to, w.Code, w.Body, reached)
		}
	}
}
