package loopback

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestIsHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost:80": true, "127.0.0.1": true, "127.9.9.9:8080": true,
		"[::1]": true, "[::1]:9": true, "::1": true,
		"evil.example": false, "evil.example:8080": false, "127.0.0.1.nip.io": false,
		"localhost.evil.example": false, "10.0.0.1:80": false, "": false, "[::2]:1": false,
	} {
		if got := IsHost(host); got != want {
			t.Errorf("IsHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestGuard: a server on 127.0.0.1 behind Guard answers requests whose
// Host is a loopback name, and refuses with 403, without calling the
// handler, one whose Host is another name.
func TestGuard(t *testing.T) {
	called := 0
	srv := httptest.NewServer(Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called++ })))
	defer srv.Close()
	for _, tc := range []struct {
		host   string
		status int
	}{
		{"", http.StatusOK}, // the URL's 127.0.0.1:port
		{"localhost", http.StatusOK},
		{"evil.example", http.StatusForbidden},
		{"evil.example:80", http.StatusForbidden},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		before := called
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || (called > before) != (tc.status == http.StatusOK) {
			t.Errorf("Host %q: %d, handler called %v; want %d", tc.host, resp.StatusCode, called > before, tc.status)
		}
	}
}
