package token_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview29ZeroGatewaySigner pins the GatewaySigner doc: "the zero value
// signs nothing and verifies nothing". Its Sign sets no header, and its
// Verify lets no request through, one signed by a real signer included.
func TestReview29ZeroGatewaySigner(t *testing.T) {
	var zero token.GatewaySigner
	h := http.Header{}
	h.Set(token.HeaderSubject, "ann")
	zero.Sign(h, time.Now(), "POST", "/mcp", []byte("{}"))
	if v := h.Values(token.HeaderSignature); len(v) != 0 {
		t.Errorf("the zero GatewaySigner signed: %q", v)
	}
	if s := zero.String(); strings.Contains(s, "\x01") {
		t.Errorf("String() = %q", s)
	}
	ran := false
	v := zero.Verify(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }),
		&token.GatewayVerifyOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	real := gwSigner(t, gwKey1)
	for _, signed := range []bool{false, true} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		req.Header.Set(token.HeaderSubject, "ann")
		if signed {
			real.Sign(req.Header, time.Now(), "POST", "/mcp", []byte(body))
		}
		rec := httptest.NewRecorder()
		v.ServeHTTP(rec, req)
		if ran || rec.Code != http.StatusUnauthorized {
			t.Errorf("signed %v: the zero GatewaySigner's Verify answered %d, handler ran %v; want 401, not run", signed, rec.Code, ran)
		}
	}
}

// TestReview29Bearer pins Bearer's doc: the scheme case-insensitive, the
// token case-sensitive and a single b64token; false for a missing header,
// another scheme, several Authorization headers, or a malformed token.
func TestReview29Bearer(t *testing.T) {
	for _, tc := range []struct {
		vals []string
		tok  string
		ok   bool
	}{
		{[]string{"Bearer AbC-._~+/=="}, "AbC-._~+/==", true},
		{[]string{"bEaReR tok"}, "tok", true},
		{nil, "", false},
		{[]string{"Basic dXNlcjpwYXNz"}, "", false},
		{[]string{"Bearer a", "Bearer b"}, "", false},
		{[]string{"Bearer"}, "", false},
		{[]string{"Bearer "}, "", false},
		{[]string{"Bearer a b"}, "", false},
		{[]string{"Bearer a=b"}, "", false},
		{[]string{"Bearer tok "}, "", false},
		{[]string{"Bearer =="}, "", false},
	} {
		h := http.Header{}
		for _, v := range tc.vals {
			h.Add("Authorization", v)
		}
		tok, ok := token.Bearer(h)
		if tok != tc.tok || ok != tc.ok {
			t.Errorf("Bearer(%q) = %q, %v; want %q, %v", tc.vals, tok, ok, tc.tok, tc.ok)
		}
	}
}
