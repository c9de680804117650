package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
)

// r30Downstream is a raw downstream on 127.0.0.1: each connection's
// requests are read whole and handed to serve, which answers (or not) on
// the connection; its listener and connections end with the test.
func r30Downstream(t *testing.T, serve func(nc net.Conn)) string {
	t.Helper()
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			go func() {
				if r30ReadRequest(nc) {
					serve(nc)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/mcp"
}

// r30ReadRequest reads one request, header and Content-Length body, from nc.
func r30ReadRequest(nc net.Conn) bool {
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer nc.SetReadDeadline(time.Time{})
	var buf []byte
	b := make([]byte, 4096)
	for {
		n, err := nc.Read(b)
		buf = append(buf, b[:n]...)
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			head := strings.ToLower(string(buf[:i]))
			want := 0
			if _, v, ok := strings.Cut(head, "content-length:"); ok {
				v, _, _ = strings.Cut(v, "\r\n")
				want, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if len(buf)-i-4 >= want {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

// r30Outcomes sends body to a gateway in front of upstream and returns
// its outcome records once there are want of them.
func r30Outcomes(t *testing.T, upstream string, opts Options, body string, sse bool, want int) []audit.Event {
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
	g, err := New(upstream, DemoTokens(), &opts)
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	r28Post(t, gw.URL, body, sse)
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(5 * time.Millisecond) {
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

// r30Shapes are the ways a tools/call goes downstream: alone (relayed as
// it comes, or read whole with Pins), or in a batch (collected as JSON,
// or the client accepting an event stream).
var r30Shapes = []struct {
	name  string
	pins  bool
	batch bool
	sse   bool
}{
	{"single", false, false, true},
	{"single pins", true, false, true},
	{"batch", false, true, false},
	{"batch sse", false, true, true},
	{"batch pins", true, true, true},
}

// r30Check runs every shape against upstream and wants one outcome record
// UPSTREAM_UNAVAILABLE (code) with detail.
func r30Check(t *testing.T, upstream string, opts Options, code, detail string) {
	t.Helper()
	for _, s := range r30Shapes {
		o := opts
		if s.pins {
			o.Pins = TrustOnFirstUse()
		}
		body := call(`7`, "get_customer_record", `{"q":"argsecret"}`)
		if s.batch {
			body = "[" + body + "]"
		}
		events := r30Outcomes(t, upstream, o, body, s.sse, 1)
		if len(events) != 1 {
			t.Errorf("%s: %d outcome records, want 1: %+v", s.name, len(events), events)
			continue
		}
		e := events[0]
		if e.Allowed || e.Code != code || e.Detail != detail {
			t.Errorf("%s: record allowed=%v code=%q detail=%q, want code=%q detail=%q", s.name, e.Allowed, e.Code, e.Detail, code, detail)
		}
		for _, secret := range []string{"argsecret", "pwsecret", "tokensecret", "127.0.0.1"} {
			if strings.Contains(e.Detail, secret) {
				t.Errorf("%s: detail %q holds %q", s.name, e.Detail, secret)
			}
		}
	}
}

// withSecrets adds a query with a token to upstream (New refuses
// userinfo).
func withSecrets(upstream string) string {
	return upstream + "?token=tokensecret"
}

// TestReview30WhyUnavailable: a forwarded tools/call the downstream could
// not be reached for, or did not answer, is recorded UPSTREAM_UNAVAILABLE
// with a detail that says why, single or in a batch, with or without Pins,
// through the gateway's own client or net/http's Transport: a refused
// connection, a timeout, a reset, a connection closed before an answer,
// malformed HTTP, a TLS certificate refused, an answer cut short. The
// detail never holds the URL's userinfo or query, nor the arguments.
// Before, the record's detail was empty: only the log line said why.
func TestReview30WhyUnavailable(t *testing.T) {
	const unavailable = "UPSTREAM_UNAVAILABLE"
	closed := func(t *testing.T) string { return "http://" + refusingAddr(t) + "/mcp" }
	raw := func(answer string) func(net.Conn) {
		return func(nc net.Conn) {
			nc.Write([]byte(answer))
			nc.Close()
		}
	}
	reset := func(nc net.Conn) {
		nc.(*net.TCPConn).SetLinger(0)
		nc.Close()
	}
	hang := func(net.Conn) {}
	cut := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":\"2.0\""
	badChunk := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
	for _, own := range []bool{true, false} {
		name := "own client"
		var opts Options
		if !own {
			name = "net/http Transport"
			opts.Transport = &http.Transport{}
		}
		t.Run(name, func(t *testing.T) {
			t.Run("refused", func(t *testing.T) {
				r30Check(t, withSecrets(closed(t)), opts, unavailable, "downstream refused the connection")
			})
			t.Run("timeout", func(t *testing.T) {
				o := opts
				o.Timeout = 200 * time.Millisecond
				r30Check(t, withSecrets(r30Downstream(t, hang)), o, unavailable, "downstream timed out after 200ms")
			})
			t.Run("reset", func(t *testing.T) {
				r30Check(t, withSecrets(r30Downstream(t, reset)), opts, unavailable, "downstream reset the connection")
			})
			t.Run("closed", func(t *testing.T) {
				r30Check(t, withSecrets(r30Downstream(t, raw(""))), opts, unavailable, "downstream closed the connection before answering")
			})
			t.Run("garbage", func(t *testing.T) {
				r30Check(t, withSecrets(r30Downstream(t, raw("garbage pwsecret\r\n\r\n"))), opts, unavailable, "downstream answered malformed HTTP")
			})
			t.Run("cut", func(t *testing.T) {
				r30Check(t, withSecrets(r30Downstream(t, raw(cut))), opts, unavailable, "downstream closed the connection before the answer's end")
			})
			t.Run("bad chunk", func(t *testing.T) {
				r30Check(t, withSecrets(r30Downstream(t, raw(badChunk))), opts, unavailable, "downstream answered malformed HTTP")
			})
		})
	}
	t.Run("tls certificate", func(t *testing.T) {
		d := httptest.NewUnstartedServer(http.NotFoundHandler())
		d.Config.ErrorLog = log.New(io.Discard, "", 0)
		d.StartTLS()
		defer d.Close()
		u := withSecrets(d.URL + "/mcp")
		r30Check(t, u, Options{}, unavailable, "downstream's TLS certificate was refused")
		r30Check(t, u, Options{Transport: &http.Transport{}}, unavailable, "downstream's TLS certificate was refused")
	})
}

// r30Transport is a custom Transport answering every request with fn.
type r30Transport func(*http.Request) (*http.Response, error)

func (f r30Transport) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestReview30WhyTransport: a custom Transport's failures are recorded with
// a cause too: its own error, unclassified, as such (its text, which may
// hold anything, never in the record), a response that breaks
// http.RoundTripper's contract, and a panic (INTERNAL).
func TestReview30WhyTransport(t *testing.T) {
	upstream := "http://127.0.0.1:1/mcp"
	cases := []struct {
		name         string
		rt           r30Transport
		code, detail string
	}{
		{"own error", func(*http.Request) (*http.Response, error) { return nil, errors.New("tokensecret") },
			"UPSTREAM_UNAVAILABLE", "the request to the downstream failed (the log says why)"},
		{"nil response", func(*http.Request) (*http.Response, error) { return nil, nil },
			"UPSTREAM_UNAVAILABLE", "the Transport returned an invalid response"},
		{"panic", func(*http.Request) (*http.Response, error) { panic("tokensecret") },
			"INTERNAL", "the Transport panicked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r30Check(t, upstream, Options{Transport: tc.rt}, tc.code, tc.detail)
		})
	}
}

// TestReview30WhyUnreadAnswers: an answer the gateway answers with -32003
// rather than relay says why when it is not the status: a batch member's
// 2xx without a JSON-RPC response, an answer with Pins that is not JSON.
// Before, a 2xx left the detail empty.
func TestReview30WhyUnreadAnswers(t *testing.T) {
	text := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\nok"
	u := r30Downstream(t, func(nc net.Conn) {
		nc.Write([]byte(text))
		nc.Close()
	})
	batch := "[" + call(`7`, "get_customer_record", "") + "]"
	e := r30Outcomes(t, u, Options{}, batch, false, 1)
	if len(e) != 1 || e[0].Code != "UPSTREAM_UNAVAILABLE" || e[0].Detail != "downstream's answer had no JSON-RPC response" {
		t.Errorf("batch, answer not JSON-RPC: %+v", e)
	}
	e = r30Outcomes(t, u, Options{Pins: TrustOnFirstUse()}, call(`7`, "get_customer_record", ""), false, 1)
	if len(e) != 1 || e[0].Code != "UPSTREAM_UNAVAILABLE" || e[0].Detail != "downstream's answer was not JSON, or larger than the limit" {
		t.Errorf("pins, answer not JSON: %+v", e)
	}
}

// TestReview30WhyAuthUnavailable: a tools/call refused because the
// authenticator could not judge its token is recorded UPSTREAM_UNAVAILABLE,
// as the downstream's failure is; its detail says it was the authorization
// server, single or in a batch. Before, the detail was empty, and the
// record read as the downstream's being down.
func TestReview30WhyAuthUnavailable(t *testing.T) {
	down := AuthenticatorFunc(func(context.Context, string) (*policy.Principal, error) {
		return nil, ErrAuthenticatorUnavailable
	})
	var mu sync.Mutex
	var events []audit.Event
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, *e)
		return nil
	})
	d := newServer(t, http.NotFoundHandler())
	g, err := New(d.URL+"/mcp", down, &Options{Audit: sink, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	c := call(`7`, "get_customer_record", "")
	for _, body := range []string{c, "[" + c + "," + c + "]"} {
		mu.Lock()
		events = nil
		mu.Unlock()
		r28Post(t, gw.URL, body, false)
		mu.Lock()
		for _, e := range events {
			if e.Code != "UPSTREAM_UNAVAILABLE" || e.Tool != "get_customer_record" ||
				e.Detail != "Authorization server unavailable: the token could not be checked" {
				t.Errorf("%s: record code=%q tool=%q detail=%q", body, e.Code, e.Tool, e.Detail)
			}
		}
		if len(events) == 0 {
			t.Errorf("%s: no record", body)
		}
		mu.Unlock()
	}
}
