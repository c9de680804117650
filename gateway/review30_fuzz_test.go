package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReview30FuzzPhrases: every failKind but failNone has a phrase, none
// has a formatting verb's remnant, and no two kinds share one (the record
// would not tell them apart); a kind past failOther has none.
func TestReview30FuzzPhrases(t *testing.T) {
	seen := map[string]failKind{}
	for k := failNone; k <= failOther; k++ {
		p := k.phrase(1500 * time.Millisecond)
		switch {
		case k == failNone && p != "":
			t.Errorf("failNone: phrase %q, want none", p)
		case k == failNone:
		case p == "":
			t.Errorf("failKind %d: no phrase", k)
		case strings.ContainsAny(p, "%\n") || strings.Contains(p, "MISSING") || strings.Contains(p, "EXTRA"):
			t.Errorf("failKind %d: phrase %q", k, p)
		default:
			if o, ok := seen[p]; ok {
				t.Errorf("failKind %d and %d: the same phrase %q", o, k, p)
			}
			seen[p] = k
		}
	}
	if p := failTimeout.phrase(1500 * time.Millisecond); !strings.HasSuffix(p, "after 1.5s") {
		t.Errorf("failTimeout: %q, want it to name the timeout", p)
	}
	if p := (failOther + 1).phrase(time.Second); p != "" {
		t.Errorf("failOther+1: phrase %q, want none", p)
	}
}

// TestReview30FuzzWrapped: failureOf classifies an error wrapped by
// fmt.Errorf's %w (once, twice, beside another %w), errors.Join (alone,
// after or before an error of no kind) and *url.Error (as net/http's
// Client wraps) as it does the error itself.
func TestReview30FuzzWrapped(t *testing.T) {
	cert := &x509.Certificate{Raw: []byte{1}}
	for _, tc := range []struct {
		name string
		err  error
		body bool
		want failKind
	}{
		{"timer", errTimeout, false, failTimeout},
		{"deadline", context.DeadlineExceeded, false, failTimeoutOther},
		{"read deadline", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true, failTimeoutOther},
		{"panic", errTransportPanic, false, failPanic},
		{"no response", errTransportNoResponse, false, failTransport},
		{"no body", errTransportNoBody, false, failTransport},
		{"bad status", errTransportBadStatus, false, failTransport},
		{"ended in line", errEndedInLine, true, failCut},
		{"bare CR", errBareCR, true, failEvents},
		{"event too large", errEventTooLarge, true, failTooLarge},
		{"batch limit", errOverBatchLimit, true, failBatchLimit},
		{"header too large", errHeaderTooLarge, false, failHeaderTooLarge},
		{"unknown CA", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{Cert: cert}}, false, failTLSCert},
		{"no system roots", &tls.CertificateVerificationError{Err: x509.SystemRootsError{}}, false, failTLSCert},
		{"hostname", x509.HostnameError{Certificate: cert, Host: "h"}, false, failTLSCert},
		{"expired", x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired}, false, failTLSCert},
		{"tls closed", &tlsClosedError{io.EOF}, false, failTLSClosed},
		{"alert", tls.AlertError(40), false, failTLS},
		{"record header", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, false, failTLS},
		{"dns", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "h", IsNotFound: true}}, false, failDNS},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false, failRefused},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true, failReset},
		{"reset text", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}, true, failReset},
		{"malformed", &malformedError{errors.New("bad chunk length")}, false, failMalformed},
		{"malformed text", errors.New(`net/http: malformed HTTP response "\x00"`), false, failMalformed},
		{"closed", io.EOF, false, failClosed},
		{"closed unexpected", io.ErrUnexpectedEOF, false, failClosed},
		{"cut", io.ErrUnexpectedEOF, true, failCut},
		{"unreachable", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}, false, failUnreachable},
		{"conn", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, false, failConn},
		{"other", errors.New("something else"), false, failOther},
	} {
		if got := failureOf(tc.err, false, tc.body); got != tc.want {
			t.Errorf("%s: failureOf = %d (%q), want %d", tc.name, got, got.phrase(time.Second), tc.want)
			continue
		}
		unrelated := errors.New("the call failed")
		for _, w := range []struct {
			how string
			err error
		}{
			{"%w", fmt.Errorf("post: %w", tc.err)},
			{"%w twice", fmt.Errorf("post: %w", fmt.Errorf("read: %w", tc.err))},
			{"second %w", fmt.Errorf("%w: %w", unrelated, tc.err)},
			{"Join", errors.Join(tc.err)},
			{"Join after", errors.Join(unrelated, tc.err)},
			{"Join before", errors.Join(tc.err, unrelated)},
			{"url.Error", &url.Error{Op: "Post", URL: "http://127.0.0.1:1/mcp", Err: tc.err}},
		} {
			if got := failureOf(w.err, false, tc.body); got != tc.want {
				t.Errorf("%s, wrapped by %s: failureOf = %d (%q), want %d (%q)", tc.name, w.how, got, got.phrase(time.Second), tc.want, tc.want.phrase(time.Second))
			}
		}
	}
	if got := failureOf(nil, true, true); got != failNone {
		t.Errorf("failureOf(nil) = %d, want failNone", got)
	}
}
