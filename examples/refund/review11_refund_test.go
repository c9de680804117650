package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReview11HealthzAnswersOK: the HTTP mode's liveness probe, as the
// README documents it: GET /healthz answers 200 {"status":"ok"}.
func TestReview11HealthzAnswersOK(t *testing.T) {
	base := startHTTP(t)
	res, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != `{"status":"ok"}` || res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("GET /healthz = %d %q (%s), want 200 {\"status\":\"ok\"} as JSON", res.StatusCode, b, res.Header.Get("Content-Type"))
	}
}
