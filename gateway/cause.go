package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
)

// A failKind is why a forwarded tools/call got no answer to relay, or one
// cut short: the cause its outcome record's detail says ([failKind.phrase]).
// The phrases are fixed: the error's own text, which may hold the
// downstream's address, its answer's bytes or a custom Transport's words,
// is only logged.
type failKind uint8

const (
	failNone           failKind = iota
	failTimeout                 // the call's timer ended it (errTimeout)
	failTimeoutOther            // another timeout: a dial's, a custom Transport's
	failRefused                 // the connection was refused
	failDNS                     // the host name did not resolve
	failUnreachable             // another dial error
	failTLSCert                 // the downstream's certificate was not trusted
	failTLSClosed               // a new TLS connection closed before an answer
	failTLS                     // another TLS failure
	failReset                   // the connection was reset
	failClosed                  // closed before the answer's header
	failCut                     // closed before the answer's end
	failConn                    // another error of the connection
	failMalformed               // not HTTP, or bad framing
	failHeaderTooLarge          // the answer's header over the limit
	failEvents                  // an event stream the gateway refuses
	failTooLarge                // an answer over the limit
	failBatchLimit              // a batch's answers over the limit
	failNoResponse              // a 2xx without the call's JSON-RPC response
	failStreamEnded             // with Pins, an event stream ended before the response
	failNotJSON                 // with Pins, a JSON answer that is not JSON
	failUnreadable              // encoded, or not UTF-8
	failTransport               // a custom Transport broke its contract
	failPanic                   // a custom Transport panicked
	failOther                   // none of these: the log says
)

// neverSent reports whether a call that failed so through the gateway's
// own client was certainly not delivered: no connection to the downstream
// was made (refused, a name that did not resolve, another dial error, a
// certificate refused in the handshake). The gateway's client never sends
// a POST again once a byte of it was written (see replayable), so a
// retry's dial failing says the same of the first attempt. net/http's
// Transport does send one again, on a new connection, when the request
// carries an Idempotency-Key (its isReplayable): there a refused dial may
// follow a delivered call, and says nothing ([Gateway.neverSent]).
func (k failKind) neverSent() bool {
	switch k {
	case failRefused, failDNS, failUnreachable, failTLSCert:
		return true
	}
	return false
}

// phrase returns what an outcome record's detail says of k; timeout is the
// gateway's.
func (k failKind) phrase(timeout time.Duration) string {
	switch k {
	case failTimeout:
		return "downstream timed out after " + timeout.String()
	case failTimeoutOther:
		return "downstream timed out (the Transport's own timeout, or the dial's)"
	case failRefused:
		return "downstream refused the connection"
	case failDNS:
		return "downstream's host name could not be resolved"
	case failUnreachable:
		return "downstream could not be reached"
	case failTLSCert:
		return "downstream's TLS certificate was refused"
	case failTLSClosed:
		return "downstream closed a new TLS connection before answering (does it refuse the client certificate?)"
	case failTLS:
		return "TLS handshake with the downstream failed"
	case failReset:
		return "downstream reset the connection"
	case failClosed:
		return "downstream closed the connection before answering"
	case failCut:
		return "downstream closed the connection before the answer's end"
	case failConn:
		return "the connection to the downstream failed"
	case failMalformed:
		return "downstream answered malformed HTTP"
	case failHeaderTooLarge:
		return "downstream's answer header was larger than the limit"
	case failEvents:
		return "downstream's event stream was malformed"
	case failTooLarge:
		return "downstream's answer was larger than the limit"
	case failBatchLimit:
		return "the batch's answers were over the limit"
	case failNoResponse:
		return "downstream's answer had no JSON-RPC response"
	case failStreamEnded:
		return "downstream ended the call's event stream without its JSON-RPC response " +
			"(a server that has its client poll sends it on a later GET, which the gateway does not tie to the call)"
	case failNotJSON:
		return "downstream's answer was not JSON, or larger than the limit"
	case failUnreadable:
		return "downstream's answer was encoded, or not UTF-8"
	case failTransport:
		return "the Transport returned an invalid response"
	case failPanic:
		return "the Transport panicked"
	case failOther:
		return "the request to the downstream failed (the log says why)"
	}
	return ""
}

// malformedError is an error of the gateway's own client reading an answer
// that is not HTTP, or whose framing is bad (a chunk's).
type malformedError struct{ err error }

func (e *malformedError) Error() string { return e.err.Error() }
func (e *malformedError) Unwrap() error { return e.err }

// asMalformed returns err, of reading an answer's header or body with
// net/http, as a malformedError unless it is the connection's (a net.Error,
// an end of file) or errHeaderTooLarge.
func asMalformed(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isNetError(err) || errors.Is(err, errHeaderTooLarge) {
		return err
	}
	return &malformedError{err}
}

// isNetError reports whether err is or wraps a net.Error. It is a function
// of its own so that its target, which escapes to errors.As, is allocated
// only when there is an error to look at: [asMalformed] runs on every read
// of an answer's body, most of which succeed.
func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// tlsClosedError is the error of a new TLS connection the downstream closed
// before a byte of answer ([upstreamClient.exchange]).
type tlsClosedError struct{ err error }

func (e *tlsClosedError) Error() string {
	return "gateway: the downstream closed a new TLS connection before answering (does it refuse the client certificate?): " + e.err.Error()
}
func (e *tlsClosedError) Unwrap() error { return e.err }

// failureOf returns why err, of sending a call downstream or of reading its
// answer (body: once its header had come), left the call without its
// answer. timedOut says the call's timer ended it (as errTimeout in err
// does); another timeout is failTimeoutOther. The gateway's own
// client's errors and net/http's Transport's are told apart; another
// Transport's, as far as they wrap the same errors.
func failureOf(err error, timedOut, body bool) failKind {
	var (
		ve  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		ci  x509.CertificateInvalidError
		tc  *tlsClosedError
		ae  tls.AlertError
		rh  tls.RecordHeaderError
		dns *net.DNSError
		me  *malformedError
		ne  *net.OpError
		to  net.Error
	)
	switch {
	case err == nil:
		return failNone
	case timedOut || errors.Is(err, errTimeout):
		return failTimeout
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &to) && to.Timeout():
		// Not the gateway's timer: a dial's timeout (net.Dialer's), or a
		// custom Transport's own (net/http's ResponseHeaderTimeout).
		return failTimeoutOther
	case errors.Is(err, errTransportPanic):
		return failPanic
	case errors.Is(err, errTransportNoResponse) || errors.Is(err, errTransportNoBody) || errors.Is(err, errTransportBadStatus):
		return failTransport
	case errors.Is(err, errEndedInLine):
		return failCut
	case errors.Is(err, errBareCR):
		return failEvents
	case errors.Is(err, errEventTooLarge):
		return failTooLarge
	case errors.Is(err, errOverBatchLimit):
		return failBatchLimit
	case errors.Is(err, errHeaderTooLarge):
		return failHeaderTooLarge
	case errors.As(err, &ve) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci):
		return failTLSCert
	case errors.As(err, &tc):
		return failTLSClosed
	case errors.As(err, &ae) || errors.As(err, &rh):
		return failTLS
	case errors.As(err, &dns):
		return failDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return failRefused
	case errors.Is(err, syscall.ECONNRESET) || isConnReset(err):
		return failReset
	case errors.As(err, &me):
		return failMalformed
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		if body {
			return failCut
		}
		return failClosed
	case errors.As(err, &ne) && ne.Op == "dial":
		return failUnreachable
	case errors.As(err, &ne):
		return failConn
	}
	// net/http's Transport says so of an answer that is not HTTP
	// ("malformed HTTP response") or of a bad chunk.
	if s := err.Error(); strings.Contains(s, "malformed") || strings.Contains(s, "chunk") {
		return failMalformed
	}
	return failOther
}

// errUpstreamFor is errUpstream(timeout) for err, the failure of a call's
// exchange with the downstream ([failureOf]), its cause noted for the
// outcome record.
func errUpstreamFor(err error, timeout, body bool) *rpcError {
	e := errUpstream(timeout)
	e.cause = failureOf(err, timeout, body)
	return e
}

// neverSent reports whether the call e ended was certainly not delivered
// (failKind.neverSent): only through the gateway's own client.
func (g *Gateway) neverSent(e *rpcError) bool {
	return g.ownClient && e.cause.neverSent()
}
