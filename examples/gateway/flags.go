package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/internal/cliarg"
	"github.com/mcpguard/mcpguard/internal/loopback"
)

// checkArgs refuses what the flag package lets through but the operator
// cannot have meant, in the arguments args that fs parsed: a flag given
// twice (the flag package keeps the last value: in a template, a second
// --policy or --host would replace the first without a word), an argument
// after the flags (the flag package stops at the first non-flag and
// ignores the rest: "--filter-tools-list false --policy strict.json"
// would leave the policy out), and a string flag given as "" (an empty
// variable in a template: --host "" would listen on every interface,
// --introspect "" or --tool-pins "" turn the check off). Leaving a flag
// out gives its default.
func checkArgs(fs *flag.FlagSet, args []string) error {
	if name := cliarg.Twice(fs, args); name != "" {
		return fmt.Errorf("--%s is given twice: give it once (the flag package would keep the last value)", name)
	}
	if rest := fs.Args(); len(rest) > 0 {
		return fmt.Errorf("unexpected argument %s: every setting is a flag (a boolean flag takes a value as --flag=false)", cliarg.Shown(rest[0]))
	}
	var empty []string
	fs.Visit(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if s, ok := g.Get().(string); ok && s == "" {
				empty = append(empty, f.Name)
			}
		}
	})
	if len(empty) > 0 {
		return fmt.Errorf("--%s \"\": %s", empty[0], emptyWant(empty[0]))
	}
	return nil
}

// emptyWant says what a flag given as "" wants.
func emptyWant(name string) string {
	switch name {
	case "policy":
		return "want a file of rules (leave the flag out for the default policy)"
	case "jwt-roles-claim":
		return "want a claim name" // token.JWTConfig would read "roles"
	case "introspect-roles-claim":
		return "want a member name" // token.IntrospectionConfig would read "scope"
	}
	return "want a value (leave the flag out for its default)"
}

// usagef returns a usageError of the formatted message.
func usagef(format string, a ...any) error {
	return usageError{fmt.Errorf(format, a...)}
}

// checkUpstream refuses an --upstream that is not an absolute http or
// https URL, or that holds user information: the gateway never sends it
// (no Authorization header goes downstream), so a downstream expecting
// those credentials would refuse every call. Its errors never show the
// URL's user information or query, which may hold a secret. It returns
// the parsed URL.
func checkUpstream(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return nil, fmt.Errorf("--upstream %s: want an absolute http or https URL, such as http://127.0.0.1:8081/mcp", shownUpstream(raw))
	case u.User != nil:
		return nil, fmt.Errorf("--upstream %s: the URL holds user information (user:password@), which the gateway never sends downstream: leave it out", shownUpstream(raw))
	}
	if err := checkHostPort(u); err != nil {
		return nil, fmt.Errorf("--upstream %s: %w", shownUpstream(raw), err)
	}
	return u, nil
}

// checkHostPort refuses a URL that no connection can reach: one whose host
// is empty (http://:8081/mcp), or whose port is empty after the colon, 0,
// or beyond 65535.
func checkHostPort(u *url.URL) error {
	if u.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	port := u.Port()
	if port == "" {
		if strings.HasSuffix(u.Host, ":") {
			return errors.New("the URL has an empty port after the colon: give the port, or leave the colon out for the scheme's default")
		}
		return nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("the URL's port %s is not one of 1 to 65535", port)
	}
	return nil
}

// checkHost refuses a --host that is not a host name or an IP address
// (an IPv6 one with a zone, fe80::1%eth0, included): one holding a port
// or a scheme, an IPv6 address in brackets, a space, a zone after an IPv4
// address (127.0.0.1%eth0) or an empty one (::1%). The listen would fail
// on it with a resolver's error, or, for an address in brackets, the
// loopback check would read it otherwise than the listen.
func checkHost(h string) error {
	addr, _, _ := strings.Cut(h, "%")
	switch {
	case strings.HasPrefix(h, "["):
		return fmt.Errorf("--host %s: give an IPv6 address without brackets (::1)", cliarg.Shown(h))
	case net.ParseIP(addr) != nil:
		// netip takes a zone after an IPv6 address only, and not empty,
		// as the listen does.
		if _, err := netip.ParseAddr(h); err != nil {
			return fmt.Errorf("--host %s: want a host name or IP address (a zone, %%name, only after an IPv6 address)", cliarg.Shown(h))
		}
		return nil
	case strings.Contains(h, ":"):
		return fmt.Errorf("--host %s: want a host name or IP address, without a port (give it as --port) or a scheme", cliarg.Shown(h))
	}
	for _, c := range h {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("--host %s: want a host name or IP address (letters, digits, '.', '-', '_')", cliarg.Shown(h))
		}
	}
	return nil
}

// checkPath refuses a --path that no request's path can equal: the
// gateway compares it with the request's decoded path, which holds no
// query, fragment or percent-escape. It refuses the health check's path
// too, which would shadow it.
func checkPath(p string) error {
	u, err := url.Parse(p)
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("--path %s: want a path beginning with /", cliarg.Shown(p))
	case err != nil || u.Path != p || u.Host != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Errorf("--path %s: want a plain path, without query, fragment or %%-escapes (the gateway compares it with the request's decoded path)", cliarg.Shown(p))
	case p == "/healthz":
		return fmt.Errorf("--path %s: the health check's path", cliarg.Shown(p))
	}
	return nil
}

// checkServerURL refuses, before anything is fetched, the URL of flag
// name that the token package would refuse: one that is not https, or
// http to a loopback host; one with user information (a credential on the
// command line); and, when bare, one with a query or a fragment too (an
// issuer whose discovery document is read).
func checkServerURL(name, raw string, bare bool) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Errorf("%s %s: want an https URL", name, shownUpstream(raw))
	case u.Scheme == "http" && !loopback.IsHost(u.Host):
		return fmt.Errorf("%s %s: http is accepted only to a loopback host (127.0.0.1, ::1, localhost): use https", name, shownUpstream(raw))
	case bare && (u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != ""):
		return fmt.Errorf("%s %s: want an https URL without user information, query or fragment", name, shownUpstream(raw))
	case u.User != nil:
		// A credential on the command line, which every user of the host
		// can read (ps, /proc), as --upstream and --jwt-issuer refuse.
		return fmt.Errorf("%s %s: want a URL without user information (the command line is readable by every user of the host)", name, shownUpstream(raw))
	}
	if err := checkHostPort(u); err != nil {
		return fmt.Errorf("%s %s: %w", name, shownUpstream(raw), err)
	}
	return nil
}

// plainOffLoopback reports whether u is plain http to a host other than
// a loopback one: the identity headers the downstream trusts, and every
// call, then cross the network unencrypted.
func plainOffLoopback(u *url.URL) bool {
	return u.Scheme == "http" && !loopback.IsHost(u.Host)
}

// maxFlagFile is the size of the largest file --tool-pins, --jwt-jwks,
// --upstream-ca, --upstream-cert or --upstream-key reads: 16 MiB.
const maxFlagFile = 16 << 20

// readFlagFile reads the file path of flag name (such as "--tool-pins"),
// at most maxFlagFile bytes: a larger one (a wrong path, /dev/zero) is
// refused, not read whole into memory.
func readFlagFile(name, path string) ([]byte, error) {
	return cliarg.ReadFile(name, path, maxFlagFile)
}

// checkPrintPinsFlags refuses, with --print-pins, every flag set in fs but
// --upstream, --timeout, the TLS flags of the upstream (--upstream-ca,
// --upstream-cert, --upstream-key) and --log-format: --print-pins lists the tools as its own
// caller (see printPins), with no policy, filter, pins or token
// verification, and serves no one, so another flag would do nothing, and a
// mistake in one would go unnoticed until the gateway is started with it.
func checkPrintPinsFlags(fs *flag.FlagSet) error {
	var other []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "print-pins", "upstream", "timeout", "upstream-ca", "upstream-cert", "upstream-key", "log-format":
		default:
			other = append(other, "--"+f.Name)
		}
	})
	if len(other) > 0 {
		return fmt.Errorf("%s with --print-pins: it takes only --upstream, --timeout, --upstream-ca, --upstream-cert, --upstream-key and --log-format (it lists the tools as the caller %s with the role admin, with no policy, filter or pins): leave the others out", strings.Join(other, ", "), printPinsSubject)
	}
	return nil
}

// upstreamTLS returns the TLS configuration of the --upstream-ca,
// --upstream-cert and --upstream-key files for an https upstream up, or nil
// when none is given: the roots of the CA file in place of the system's
// (every PEM block a certificate), and the client certificate of the cert
// and key files (both or neither), which must be valid now; MinVersion TLS
// 1.2. A key file that others may read is warned about, not refused (a
// Kubernetes secret is mounted 0644 by default). Its errors are usage
// errors naming the flag.
func upstreamTLS(logger *slog.Logger, up *url.URL, caFile, certFile, keyFile string, now time.Time) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	switch {
	case up.Scheme != "https":
		return nil, usagef("%s: only with an https --upstream (it would be ignored over plain http)", tlsFlagNames(caFile, certFile, keyFile))
	case certFile != "" && keyFile == "":
		return nil, usagef("--upstream-cert without --upstream-key: give the client certificate's private key too")
	case keyFile != "" && certFile == "":
		return nil, usagef("--upstream-key without --upstream-cert: give the client certificate too")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		data, err := readFlagFile("--upstream-ca", caFile)
		if err != nil {
			return nil, usageError{err}
		}
		if cfg.RootCAs, err = parseRoots(data); err != nil {
			return nil, usagef("--upstream-ca %s: %w", caFile, err)
		}
	}
	if certFile != "" {
		certPEM, err := readFlagFile("--upstream-cert", certFile)
		if err != nil {
			return nil, usageError{err}
		}
		keyPEM, err := readFlagFile("--upstream-key", keyFile)
		if err != nil {
			return nil, usageError{err}
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, usagef("--upstream-cert %s, --upstream-key %s: %w", certFile, keyFile, err)
		}
		if cert.Leaf == nil {
			// GODEBUG=x509keypairleaf=0 leaves it out.
			if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
				return nil, usagef("--upstream-cert %s: %w", certFile, err)
			}
		}
		switch leaf := cert.Leaf; {
		case now.After(leaf.NotAfter):
			return nil, usagef("--upstream-cert %s: the certificate expired at %s", certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
		case now.Before(leaf.NotBefore):
			return nil, usagef("--upstream-cert %s: the certificate is not valid before %s", certFile, leaf.NotBefore.UTC().Format(time.RFC3339))
		}
		cfg.Certificates = []tls.Certificate{cert}
		if fi, err := os.Stat(keyFile); err == nil && fi.Mode().Perm()&0o004 != 0 {
			logger.Warn("--upstream-key: the private key file is readable by every user of this machine: make it readable by the gateway's user only (chmod 600)", "file", keyFile, "mode", fi.Mode().Perm().String())
		}
	}
	return cfg, nil
}

// parseRoots returns the pool of the PEM certificates in data: at least
// one, and no block that is not a certificate (a key or a request in the
// file is a mistake). Text around the blocks is skipped, as in a system's
// bundle.
func parseRoots(data []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("the file holds a PEM block %q: want only certificates (CERTIFICATE)", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("the file holds no PEM certificate")
	}
	return pool, nil
}

// tlsFlagNames names the flags of --upstream-ca, --upstream-cert and
// --upstream-key given (not empty), for a message.
func tlsFlagNames(caFile, certFile, keyFile string) string {
	var given []string
	for _, f := range []struct{ name, v string }{{"--upstream-ca", caFile}, {"--upstream-cert", certFile}, {"--upstream-key", keyFile}} {
		if f.v != "" {
			given = append(given, f.name)
		}
	}
	return strings.Join(given, ", ")
}

// anyOrigin reports whether --allowed-origins lists "*", every origin.
func anyOrigin(origins string) bool {
	for o := range strings.SplitSeq(origins, ",") {
		if strings.TrimSpace(o) == "*" {
			return true
		}
	}
	return false
}

// upstreamIsListen reports whether up, the --upstream URL, names the
// address the gateway listens on, --host and --port: the same host (an
// IP address equal to it, "localhost" for a loopback one, a loopback
// upstream for an unspecified --host, which listens on every address)
// and the same port (the scheme's default when up gives none). With
// --port 0 (a free port) it never does. Names are not resolved: only
// what the flags say is compared.
func upstreamIsListen(up *url.URL, host string, port int) bool {
	upPort := up.Port()
	if upPort == "" {
		upPort = map[string]string{"http": "80", "https": "443"}[up.Scheme]
	}
	if n, err := strconv.Atoi(upPort); err != nil || port == 0 || n != port {
		return false
	}
	upHost := up.Hostname()
	if strings.EqualFold(upHost, host) {
		return true
	}
	a, aErr := netip.ParseAddr(upHost)
	b, bErr := netip.ParseAddr(host)
	isLocalhost := func(ip netip.Addr) bool { // what "localhost" names
		return ip.Unmap() == netip.AddrFrom4([4]byte{127, 0, 0, 1}) || ip == netip.IPv6Loopback()
	}
	switch {
	case aErr == nil && bErr == nil:
		return a.Unmap() == b.Unmap() || b.IsUnspecified() && a.IsLoopback()
	case bErr == nil: // upHost is a name
		return loopback.IsHost(upHost) && (b.IsUnspecified() || isLocalhost(b))
	case aErr == nil: // host is a name
		return loopback.IsHost(host) && isLocalhost(a)
	}
	return false
}
