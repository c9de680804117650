package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReview25bAllowedOriginsChecked: an --allowed-origins entry that no
// browser's Origin can ever equal (a path or trailing slash, a default
// port written out, no scheme) was accepted and silently matched nothing;
// it stops the start with exit status 2, naming the entry.
func TestReview25bAllowedOriginsChecked(t *testing.T) {
	for _, bad := range []string{
		"https://app.example.com/",
		"http://app.example.com:80",
		"https://app.example.com:443",
		"app.example.com",
		"https://app.example.com/path",
		"ftp://app.example.com",
		"https://user@app.example.com",
	} {
		// One with user information is named without being shown, as a
		// secret may be there (review31).
		if err := checkAllowedOrigins([]string{"https://ok.example.com", bad}); err == nil || strings.Contains(bad, "@") == strings.Contains(err.Error(), bad) {
			t.Errorf("checkAllowedOrigins(%q) = %v, want an error naming it (shown unless it has user information)", bad, err)
		}
		// Through the command line: an empty --redis, refused after the
		// origins are checked, keeps a run without the check from serving.
		var stderr bytes.Buffer
		code := run([]string{"--gateway", "http://127.0.0.1:1", "--transport", "http", "--redis", "", "--allowed-origins", "https://ok.example.com," + bad}, &bytes.Buffer{}, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "--allowed-origins") {
			t.Errorf("--allowed-origins %q: exit %d, stderr %q; want 2 naming the flag", bad, code, stderr.String())
		}
	}
	for _, good := range []string{"https://app.example.com", "http://localhost:*", "http://127.0.0.1:8080"} {
		if err := checkAllowedOrigins([]string{good}); err != nil {
			t.Errorf("checkAllowedOrigins(%q) = %v, want nil", good, err)
		}
	}
}

// TestReview25bTwoOriginsRefused: a request with two Origin headers, the
// first allowed, passed (only the first was read); it is refused, as by
// the gateway and the ticket server.
func TestReview25bTwoOriginsRefused(t *testing.T) {
	h := hostOrigin(httpOptions{allowedOrigins: []string{"https://app.example.com"}}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	for _, tc := range []struct {
		origins []string
		want    int
	}{
		{nil, http.StatusNoContent},
		{[]string{"https://app.example.com"}, http.StatusNoContent},
		{[]string{"https://evil.example"}, http.StatusForbidden},
		{[]string{"https://app.example.com", "https://evil.example"}, http.StatusForbidden},
		{[]string{""}, http.StatusForbidden},
	} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:4107/mcp", nil)
		r.Host = "127.0.0.1:4107"
		for _, o := range tc.origins {
			r.Header.Add("Origin", o)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("Origin %q: %d, want %d", tc.origins, w.Code, tc.want)
		}
	}
}
