package main

import (
	"net/http"
	"testing"
	"time"
)

// TestReview20HTTPServerTimeouts: a connection that sent its headers and
// then stalled in the body (or a kept-alive one left idle) was held for
// ever: the server had only a ReadHeaderTimeout, and no session check, cap
// or limit applies before the body is read. By hand, a POST /mcp with
// "Content-Length: 100" and one byte of body was still open 15 s later. The
// server now bounds the whole request's read and a connection's idle time.
// (A stalled connection cannot be shown closing here: the bounds are
// longer than a test may run.)
func TestReview20HTTPServerTimeouts(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler())
	for _, tc := range []struct {
		name     string
		got      time.Duration
		min, max time.Duration
	}{
		{"read_header", srv.ReadHeaderTimeout, time.Second, 30 * time.Second},
		// A request is at most 4 MiB (the go-sdk's cap).
		{"read", srv.ReadTimeout, 10 * time.Second, time.Minute},
		{"idle", srv.IdleTimeout, 10 * time.Second, 5 * time.Minute},
	} {
		if tc.got < tc.min || tc.got > tc.max {
			t.Errorf("%s timeout %v, want from %v to %v", tc.name, tc.got, tc.min, tc.max)
		}
	}
	if srv.WriteTimeout != 0 {
		t.Errorf("write timeout %v: it would cut a call's answer (each call has its own 10 s)", srv.WriteTimeout)
	}
}
