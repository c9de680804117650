package streamstop

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHandler: a GET and a subscriptions/listen POST see their context end
// when stop ends (at once when it has); another POST does not; every
// handler reads the whole body, a long one included.
func TestHandler(t *testing.T) {
	stop, end := context.WithCancel(context.Background())
	defer end()
	type seen struct {
		ended bool
		body  string
	}
	got := make(chan seen, 1)
	h := Handler(stop, "/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			got <- seen{true, string(b)}
		case <-time.After(200 * time.Millisecond):
			got <- seen{false, string(b)}
		}
	}))
	long := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"s":"` + strings.Repeat("a", 100<<10) + `"}}}`
	for _, tc := range []struct {
		name, method, body string
		ends               bool
	}{
		{"get", http.MethodGet, "", true},
		{"listen", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`, true},
		{"listen_escaped", http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"subscriptions\/listen"}`, true},
		{"call", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, false},
		{"batch", http.MethodPost, `[{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen"}]`, false},
		{"long", http.MethodPost, long, false},
		{"get_other_path", http.MethodGet, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ends {
				time.AfterFunc(20*time.Millisecond, end) // the first: later, at once
			}
			path := "/mcp"
			if tc.name == "get_other_path" {
				path = "/api"
			}
			req := httptest.NewRequest(tc.method, path, strings.NewReader(tc.body))
			h.ServeHTTP(httptest.NewRecorder(), req)
			s := <-got
			if s.ended != tc.ends || s.body != tc.body {
				t.Errorf("ended %v (want %v), body of %d bytes (want %d)", s.ended, tc.ends, len(s.body), len(tc.body))
			}
		})
	}
}
