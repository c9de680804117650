// Package loopback guards servers on the user's machine against DNS
// rebinding: a web page of evil.example whose name is rebound to 127.0.0.1
// reaches a server listening there, but its requests carry Host
// evil.example.
package loopback

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// IsHost reports whether hostport, a Host header (a host with or without a
// port, an IPv6 address in brackets), names localhost or a loopback
// address. "localhost" is matched in ASCII letter case only: under Unicode
// folding "localhoſt" (with the long s) would match too, but it is another
// name, one DNS may resolve anywhere. A trailing dot, and the legacy IPv4
// spellings (127.1, 2130706433), are not matched.
func IsHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if asciiEqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// asciiEqualFold reports whether s and lower, which is lower-case ASCII,
// are equal but for the case of ASCII letters.
func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// Rebound reports whether r came to a loopback address under a Host that
// does not name one: the mark of DNS rebinding, which the go-sdk's
// StreamableHTTPHandler refuses the same way. The local address is read
// from its String (an "ip:port"), whatever its type: a *net.TCPAddr, an
// HTTP/3 server's *net.UDPAddr, a listener wrapper's own. A request that
// came to another address (a server listening on a public interface) or
// to a unix socket is never rebound, nor is one whose context holds no
// local address (a handler called other than by net/http's server).
func Rebound(r *http.Request) bool {
	if IsHost(r.Host) {
		return false
	}
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || a == nil {
		return false
	}
	if tcp, ok := a.(*net.TCPAddr); ok && tcp != nil {
		return tcp.IP.IsLoopback() // what String would say, without its allocations
	}
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap.Addr().IsLoopback()
}

// Guard returns h behind a check that refuses a rebound request (see
// [Rebound]) with 403.
func Guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if Rebound(r) {
			http.Error(w, "forbidden: the request came to a loopback address under another name (DNS rebinding)", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ListenAddr checks addr, the host:port a server is told to listen on (a
// flag's value), and returns it with an empty host made 127.0.0.1, and
// whether its host is loopback, as [IsHost] tells. Its error does not
// quote addr, which may be a URL whose password was put in the wrong
// flag: the caller names the value as it may show it.
func ListenAddr(addr string) (hostport string, local bool, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		why := "want host:port"
		if ae := (*net.AddrError)(nil); errors.As(err, &ae) {
			why = ae.Err
		}
		return "", false, errors.New(why)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", false, errors.New("the port must be a number from 0 to 65535")
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if !listenHost(host) {
		return "", false, errors.New("the host must be a host name or an IP address (an IPv6 address in brackets, a zone only after one)")
	}
	return net.JoinHostPort(host, port), IsHost(host), nil
}

// listenHost reports whether host, of a listen address, can be listened on
// by name or address: an IP address (a zone only after an IPv6 one), or a
// host name of letters, digits, '.', '-' and '_'. Anything else (a zone
// after an IPv4 address, an empty zone, a space) would fail at listen,
// in net's words, after the start's checks.
func listenHost(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return host != "" && strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == ""
}
