package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// r30bGoneOutcomes sends body to a gateway with auth (nil: DemoTokens) and
// opts, its handler wrapped by wrap when not nil, in front of upstream from
// a client that hangs up after leave, and returns the gateway's outcome
// records once there are want of them (or 5 s have passed).
func r30bGoneOutcomes(t *testing.T, upstream string, auth Authenticator, opts Options, wrap func(http.Handler) http.Handler, body string, sse bool, leave time.Duration, want int) []audit.Event {
	t.Helper()
	var mu sync.Mutex
	var events []audit.Event
	opts.Audit = audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if e.Phase == audit.PhaseOutcome {
			events = append(events, *e)
		}
		return nil
	})
	opts.Logger = discardLogger()
	if auth == nil {
		auth = DemoTokens()
	}
	g, err := New(upstream, auth, &opts)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = g
	if wrap != nil {
		h = wrap(h)
	}
	gw := httptest.NewServer(h)
	defer gw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), leave)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if sse {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	req.Header.Set("Authorization", viewer)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close() // the answer came before the client left
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(events)
		mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]audit.Event(nil), events...)
}

// TestReview30bGoneClientCutIsNotDownstreamTimeout: a client that hangs up
// while the downstream still sends its answer (a byte every 30 ms, never
// ending) leaves the call to the gateway's cut, one timeout after the client
// was last seen. The outcome record says the client went away, and not that
// the downstream timed out: the gateway ended the call for its client's
// leaving. Before, with Pins (the answer read whole), the record said
// "downstream timed out after 300ms" alone, blaming the downstream.
func TestReview30bGoneClientCutIsNotDownstreamTimeout(t *testing.T) {
	u := r30Downstream(t, func(nc net.Conn) {
		defer nc.Close()
		nc.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"jsonrpc\":\"2.0\","))
		for range 150 {
			time.Sleep(30 * time.Millisecond)
			if _, err := nc.Write([]byte(" ")); err != nil {
				return
			}
		}
	})
	for _, s := range r30Shapes {
		t.Run(s.name, func(t *testing.T) {
			o := Options{Timeout: 300 * time.Millisecond}
			if s.pins {
				o.Pins = TrustOnFirstUse()
			}
			body := call(`7`, "get_customer_record", "")
			if s.batch {
				body = "[" + body + "]"
			}
			events := r30bGoneOutcomes(t, u, nil, o, nil, body, s.sse, 150*time.Millisecond, 1)
			if len(events) != 1 {
				t.Fatalf("%d outcome records, want 1: %+v", len(events), events)
			}
			if e := events[0]; e.Code != "UPSTREAM_UNAVAILABLE" || e.Detail != clientGone {
				t.Errorf("record code=%q detail=%q, want UPSTREAM_UNAVAILABLE %q", e.Code, e.Detail, clientGone)
			}
		})
	}
}

// TestReview30bTransportTimeoutNotTheGateways: a timeout that is not the
// gateway's (net/http's Transport's ResponseHeaderTimeout here, or a dial's)
// is recorded as a timeout without the gateway's Timeout, which did not end
// the call. Before, the record said "downstream timed out after 5s" for a
// call that timed out after 100 ms.
func TestReview30bTransportTimeoutNotTheGateways(t *testing.T) {
	u := r30Downstream(t, func(net.Conn) {})
	opts := Options{Timeout: 5 * time.Second, Transport: &http.Transport{ResponseHeaderTimeout: 100 * time.Millisecond}}
	r30Check(t, u, opts, "UPSTREAM_UNAVAILABLE", "downstream timed out (the Transport's own timeout, or the dial's)")
}

// TestReview30bTransportTimeoutCause: the causes of timeouts that are not
// the gateway's, as the gateway's own client and net/http's Transport give
// them: a dial timed out (the Dialer's Timeout, 30 s), net/http's
// ResponseHeaderTimeout, a read deadline of a Transport's connection. The
// gateway's own timer (errTimeout, or timedOut) keeps its phrase.
func TestReview30bTransportTimeoutCause(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}
	read := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("i/o timeout")}
	for _, tc := range []struct {
		name     string
		err      error
		timedOut bool
		want     failKind
	}{
		{"dial", dial, false, failTimeoutOther},
		{"header", fmt.Errorf("wrapped: %w", context.DeadlineExceeded), false, failTimeoutOther},
		{"read deadline", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, false, failTimeoutOther},
		{"gateway's timer", fmt.Errorf("%w (%v)", errTimeout, read), false, failTimeout},
		{"gateway's timer, dial interrupted", &net.OpError{Op: "dial", Err: context.Canceled}, true, failTimeout},
	} {
		if got := failureOf(tc.err, tc.timedOut, false); got != tc.want {
			t.Errorf("%s: failureOf = %d (%q), want %d (%q)", tc.name, got, got.phrase(time.Second), tc.want, tc.want.phrase(time.Second))
		}
	}
}

// timeoutErr is a net.Error that timed out, as os.ErrDeadlineExceeded is.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestReview30bAuthClientGone: a tools/call whose request's context ended
// while the authenticator (an Introspector asking a slow endpoint) checked
// its token (an HTTP/2 client's reset stream, an embedder's middleware's
// deadline) is refused as the authenticator could not judge it, but its
// record says the request's context ended, as a limiter's decision cut so
// does, not that the authorization server failed or timed out: the
// request's end stopped the check. Before, the record read "Authorization
// server unavailable: the token could not be checked" (or "timed out").
func TestReview30bAuthClientGone(t *testing.T) {
	release := make(chan struct{})
	as := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer close(release)
	in, err := token.NewIntrospector(token.IntrospectionConfig{Endpoint: as.URL, Audience: "mcp", Timeout: 5 * time.Second, ErrorHandler: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	d := newServer(t, http.NotFoundHandler())
	// The request's context ends after 100 ms, its handler running on.
	ends := map[string]func(http.Handler) http.Handler{
		"cancelled": func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx, cancel := context.WithCancel(r.Context())
				defer cancel()
				time.AfterFunc(100*time.Millisecond, cancel)
				h.ServeHTTP(w, r.WithContext(ctx))
			})
		},
		"deadline": func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx, cancel := context.WithTimeout(r.Context(), 100*time.Millisecond)
				defer cancel()
				h.ServeHTTP(w, r.WithContext(ctx))
			})
		},
	}
	c := call(`7`, "get_customer_record", "")
	for name, end := range ends {
		for _, body := range []string{c, "[" + c + "]"} {
			events := r30bGoneOutcomes(t, d.URL+"/mcp", in, Options{}, end, body, false, 3*time.Second, 1)
			if len(events) != 1 {
				t.Fatalf("%s %s: %d outcome records, want 1: %+v", name, body, len(events), events)
			}
			if e := events[0]; e.Tool != "get_customer_record" || e.Detail != clientGoneUnchecked {
				t.Errorf("%s %s: record code=%q tool=%q detail=%q, want detail %q", name, body, e.Code, e.Tool, e.Detail, clientGoneUnchecked)
			}
		}
	}
	// An authenticator failing by itself is still told as such.
	down := AuthenticatorFunc(func(context.Context, string) (*policy.Principal, error) {
		return nil, ErrAuthenticatorUnavailable
	})
	events := r30bGoneOutcomes(t, d.URL+"/mcp", down, Options{}, nil, c, false, 5*time.Second, 1)
	if len(events) != 1 || events[0].Detail != "Authorization server unavailable: the token could not be checked" {
		t.Errorf("authenticator down: %+v", events)
	}
}
