package loopback

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestReview38NineLetterNames pins that only "localhost" itself, in any
// ASCII case, is the loopback name: the tests so far held no other name of
// its nine bytes, so a comparison that skipped the first byte, or that took
// the first difference for a match, let "xocalhost" or "evil.test" pass as
// local, and a rebound page under such a name reach the server.
func TestReview38NineLetterNames(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "lOcAlHoSt:1": true,
		"xocalhost": false, "Xocalhost": false, "localhosx": false, "evil.test": false, "evil.test:80": false,
		"1ocalhost": false, "localhos7": false,
	} {
		if got := IsHost(host); got != want {
			t.Errorf("IsHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestReview38ReboundWithoutLocalAddress pins that a request whose context
// holds no local address (a handler called directly, not by net/http's
// server) is not taken as rebound, and that one to a loopback address under
// another name is.
func TestReview38ReboundWithoutLocalAddress(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "http://evil.example/", nil)
	if Rebound(r) {
		t.Errorf("Rebound(no local address, Host evil.example) = true, want false")
	}
	ctx := context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80})
	if !Rebound(r.WithContext(ctx)) {
		t.Errorf("Rebound(to 127.0.0.1, Host evil.example) = false, want true")
	}
}
