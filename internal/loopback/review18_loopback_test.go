package loopback

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestReview18IsHostEdges: "localhost" is matched in ASCII only (the long
// s U+017F folds to 's' under Unicode folding, but "localhoſt" is another
// name, looked up in DNS); loopback addresses in their standard forms,
// IPv4-mapped and zoned too; the legacy IPv4 spellings (127.1, 0x7f.1,
// 2130706433) and names with a trailing dot are not matched, which fails
// closed (Rebound refuses them, a caller that allows plain HTTP for a
// loopback host asks for HTTPS).
func TestReview18IsHostEdges(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"localho\u017ft", false},
		{"LOCALHO\u017fT:80", false},
		{"[localho\u017ft]:80", false},
		{"locａlhost", false}, // fullwidth a
		{"LOCALHOST", true},
		{"LocalHost:8080", true},
		{"[::ffff:127.0.0.1]:80", true},
		{"::ffff:7f00:1", true},
		{"[::1%eth0]:80", true},
		{"[::ffff:10.0.0.1]:80", false},
		{"127.255.255.254:1", true},
		{"0:0:0:0:0:0:0:1", true},
		{"127.1", false},
		{"0x7f.1", false},
		{"2130706433", false},
		{"017700000001", false},
		{"localhost.", false},
		{"127.0.0.1.", false},
		{"localhost:80:80", false},
		{"0.0.0.0", false},
		{"[::]:80", false},
		{"localhost\x00", false},
		{"local\u200bhost", false},
	} {
		if got := IsHost(tc.host); got != tc.want {
			t.Errorf("IsHost(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

// TestReview18ReboundLongS: a request that came to 127.0.0.1 under Host
// "localhoſt" is rebound.
func TestReview18ReboundLongS(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Host = "localho\u017ft:8080"
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}))
	if !Rebound(r) {
		t.Errorf("Rebound(Host %q to 127.0.0.1) = false, want true", r.Host)
	}
}
