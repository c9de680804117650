package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestReview58ListenURLShowsTheHost: -http 0.0.0.0:8081 was logged as
// http://[::]:8081/mcp (Go's listener there is dual-stack), which is not
// what the operator wrote; the host is the flag's, the port the listener's.
func TestReview58ListenURLShowsTheHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for addr, want := range map[string]string{
		"0.0.0.0:0":   "http://0.0.0.0:" + port + "/mcp",
		"[::1]:0":     "http://[::1]:" + port + "/mcp",
		"localhost:0": "http://localhost:" + port + "/mcp",
		":0":          "http://127.0.0.1:" + port + "/mcp",
	} {
		if got := listenURL(addr, ln); got != want {
			t.Errorf("listenURL(%q) = %q, want %q", addr, got, want)
		}
	}
}

// r58Cut is a body that fails after some bytes, as one cut by the read
// timeout does.
type r58Cut struct{ n int }

func (c *r58Cut) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, errors.New("i/o timeout")
	}
	k := min(len(p), c.n)
	copy(p, strings.Repeat("x", k))
	c.n -= k
	return k, nil
}

// TestReview58RecorderStatus: the recorder answered a body it could not read
// 413 Request Entity Too Large whatever the cause; one cut short (the read
// timeout, a client gone) is 400, and only one over the limit 413.
func TestReview58RecorderStatus(t *testing.T) {
	h := recorder(&ring[receivedRequest]{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the next handler got a request whose body was not read")
	}))
	for name, tc := range map[string]struct {
		body io.Reader
		want int
	}{
		"cut":      {&r58Cut{n: 10}, http.StatusBadRequest},
		"too_long": {strings.NewReader(strings.Repeat("x", maxBody+1)), http.StatusRequestEntityTooLarge},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", tc.body))
		if rec.Code != tc.want {
			t.Errorf("%s: status %d, want %d", name, rec.Code, tc.want)
		}
	}
}
