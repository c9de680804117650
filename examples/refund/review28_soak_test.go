package main

import (
	"net/http"
	"testing"
	"time"
)

// TestReview28HTTPServerTimeouts: the HTTP mode's server had only a
// ReadHeaderTimeout, so a client that sent a POST's headers and then
// stalled in its body, or kept its connection alive and idle after one
// request, held that connection (a descriptor, a goroutine and its
// buffers) for ever: nothing of the guard applies before a request has
// been read. By hand, against the built binary, 200 connections that each
// sent "Content-Length: 100" and one byte of body, and 200 that made one
// GET /healthz and idled, were all still open (/proc/<pid>/fd) 60 s
// later. The server now bounds the whole request's read and a
// connection's idle time, as the shop and the gateway do. (A stalled
// connection cannot be shown closing here: the bounds are longer than a
// test may run.)
func TestReview28HTTPServerTimeouts(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler())
	for _, tc := range []struct {
		name     string
		got      time.Duration
		min, max time.Duration
	}{
		{"read_header", srv.ReadHeaderTimeout, time.Second, 30 * time.Second},
		{"read", srv.ReadTimeout, 10 * time.Second, time.Minute},
		{"idle", srv.IdleTimeout, 10 * time.Second, 5 * time.Minute},
	} {
		if tc.got < tc.min || tc.got > tc.max {
			t.Errorf("%s timeout %v, want from %v to %v", tc.name, tc.got, tc.min, tc.max)
		}
	}
	if srv.WriteTimeout != 0 {
		t.Errorf("write timeout %v: it would cut a slow call's answer", srv.WriteTimeout)
	}
}
