package token_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview28cGatewaySignerZero checks that a GatewaySigner not made by
// NewGatewaySigner neither panics nor lets anything through: its Sign sets
// no signature, its Verify refuses, and a nil one prints.
func TestReview28cGatewaySignerZero(t *testing.T) {
	var z token.GatewaySigner
	h := http.Header{}
	z.Sign(h, time.Now(), http.MethodPost, "/mcp", []byte("{}"))
	if v := h.Get(token.HeaderSignature); v != "" {
		t.Errorf("zero signer signed: %q", v)
	}
	ran := false
	v := z.Verify(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }), nil)
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
	r.Header.Set(token.HeaderSignature, "t=1,n=00000000000000000000000000000000,v1="+strings.Repeat("0", 64))
	w := httptest.NewRecorder()
	v.ServeHTTP(w, r)
	if ran || w.Code != http.StatusUnauthorized {
		t.Errorf("zero signer's Verify: ran %v, status %d; want a 401 refusal", ran, w.Code)
	}
	var n *token.GatewaySigner
	if s := n.String(); !strings.Contains(s, "nil") {
		t.Errorf("nil signer's String: %q", s)
	}
}
