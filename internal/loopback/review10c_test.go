package loopback

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// otherAddr is a local address of a type that is not *net.TCPAddr, as a
// listener wrapper may report it.
type otherAddr string

func (a otherAddr) Network() string { return "tcp" }
func (a otherAddr) String() string  { return string(a) }

// TestReboundAnyAddr: the local address is judged by what it names, as the
// go-sdk's check does (it reads net.Addr.String()), whatever its type: an
// HTTP/3 server's *net.UDPAddr, or a listener wrapper's own type.
func TestReboundAnyAddr(t *testing.T) {
	var nilTCP *net.TCPAddr
	for _, tc := range []struct {
		name  string
		local net.Addr
		want  bool
	}{
		{"tcp loopback", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, true},
		{"tcp v4-mapped loopback", &net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 8080}, true},
		{"tcp6 loopback", &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, true},
		{"tcp public", &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 8080}, false},
		{"udp loopback", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 443}, true},
		{"udp public", &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 443}, false},
		{"wrapper loopback", otherAddr("127.0.0.1:8080"), true},
		{"wrapper v6 loopback", otherAddr("[::1]:8080"), true},
		{"wrapper public", otherAddr("192.0.2.1:8080"), false},
		{"unix socket", &net.UnixAddr{Name: "/tmp/gw.sock", Net: "unix"}, false},
		{"nil *TCPAddr", nilTCP, false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = "evil.example"
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tc.local))
		if got := Rebound(r); got != tc.want {
			t.Errorf("%s: Rebound = %v, want %v", tc.name, got, tc.want)
		}
		r.Host = "localhost:8080"
		if Rebound(r) {
			t.Errorf("%s, Host localhost: rebound", tc.name)
		}
	}
}
