package token_test

import (
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview28bGatewayVerifySessionID: the session a request runs in is
// part of what the gateway decided (it lets a principal use only its own
// sessions), so someone on the network who moves a signed request into
// another session, or adds or drops one, must be refused.
func TestReview28bGatewayVerifySessionID(t *testing.T) {
	now := time.Unix(1767225600, 0)
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	s := gwSigner(t, gwKey1)
	signed := func(sid string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set(token.HeaderSubject, "mallory")
		r.Header.Set(token.HeaderRole, "user")
		r.Header.Set(token.HeaderRequestID, "rid-1")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
		}
		s.Sign(r.Header, now, r.Method, r.RequestURI, []byte(body))
		return r
	}
	tests := []struct {
		name   string
		req    func() *http.Request
		status int
	}{
		{"valid", func() *http.Request { return signed("s-mallory") }, 204},
		{"valid_none", func() *http.Request { return signed("") }, 204},
		{"moved", func() *http.Request {
			r := signed("s-mallory")
			r.Header.Set("Mcp-Session-Id", "s-ann")
			return r
		}, 401},
		{"added", func() *http.Request {
			r := signed("")
			r.Header.Set("Mcp-Session-Id", "s-ann")
			return r
		}, 401},
		{"dropped", func() *http.Request {
			r := signed("s-mallory")
			r.Header.Del("Mcp-Session-Id")
			return r
		}, 401},
		{"twice", func() *http.Request {
			r := signed("s-mallory")
			r.Header.Add("Mcp-Session-Id", "s-ann")
			return r
		}, 401},
		{"underscored", func() *http.Request {
			r := signed("")
			r.Header["Mcp_Session_Id"] = []string{"s-ann"}
			return r
		}, 401},
		{"twice_reversed", func() *http.Request {
			r := signed("s-mallory")
			r.Header["Mcp-Session-Id"] = []string{"s-ann", "s-mallory"}
			return r
		}, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := &gwNext{}
			h := s.Verify(next, &token.GatewayVerifyOptions{Now: func() time.Time { return now }, Logger: discardLogger()})
			w := httptest.NewRecorder()
			h.ServeHTTP(w, tc.req())
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d (%s)", w.Code, tc.status, w.Body)
			}
			if (next.calls == 1) != (tc.status == 204) {
				t.Errorf("next ran %d times", next.calls)
			}
		})
	}
}

// TestReview28bGatewayVerifyHugeSkew: a MaxSkew too large to round up to
// whole seconds without overflow still accepts a fresh signature.
func TestReview28bGatewayVerifyHugeSkew(t *testing.T) {
	now := time.Unix(1767225600, 0)
	s := gwSigner(t, gwKey1)
	for _, skew := range []time.Duration{math.MaxInt64, math.MaxInt64 - time.Second + 2, 100 * 365 * 24 * time.Hour} {
		h := s.Verify(&gwNext{}, &token.GatewayVerifyOptions{MaxSkew: skew, Now: func() time.Time { return now },
			Logger: discardLogger()})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, gwRequest(s, now, "{}"))
		if w.Code != 204 {
			t.Errorf("MaxSkew %v: status %d, want 204 (%s)", skew, w.Code, w.Body)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
