package token

import (
	"bytes"
	"testing"
)

// TestReview28GatewaySignatureVector pins the documented test vector: the
// package doc's recipe, followed in another language, must give this value.
func TestReview28GatewaySignatureVector(t *testing.T) {
	s, err := NewGatewaySigner(bytes.Repeat([]byte{0x0b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	m := s.pools[0].Get().(*gwMAC)
	got := m.sign(1767225600, []byte("00112233445566770000000000000001"), "POST", "/mcp?x=1",
		"ann", "support,billing", "0193a1b2c3d4-5e6f708192a3", "a1b2c3d4e5f6", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	const want = "t=1767225600,n=00112233445566770000000000000001,v1=8102938af10bd1d1e77e5dafb0057b82ea159c49627232e508699e94cd5b6549"
	if got != want {
		t.Errorf("signature = %q, want %q", got, want)
	}
}
