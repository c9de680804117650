//go:build unix

package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestReview22bHangupDuringStart sends SIGHUP to the gateway binary while
// the first fetch of its --jwt-jwks waits on a JWK Set server that does not
// answer, as a log rotator's postrotate step (or a service manager's
// reload) may at any time. The README and the package doc say SIGHUP is
// logged and ignored and never ends the gateway without its shutdown; but
// SIGHUP was caught only from the opening of the --audit sink, after the
// key fetch, and until then its default action killed the process. The
// gateway must live on, and a SIGTERM then stop it with status 0.
func TestReview22bHangupDuringStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary; skipped with -short")
	}
	gwBin, _ := buildBinaries(t)
	for _, tc := range []struct {
		name  string
		audit []string
	}{
		{"no_audit", nil},
		{"jsonl_audit", []string{"--audit", filepath.Join(t.TempDir(), "audit.jsonl")}},
		{"sqlite_audit", []string{"--audit", filepath.Join(t.TempDir(), "audit.db")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Bool
			hang := make(chan struct{})
			keys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Store(true)
				select {
				case <-r.Context().Done():
				case <-hang:
				}
			}))
			defer keys.Close()
			defer close(hang)
			args := append([]string{"--port", loopbackPort(t), "--upstream", "http://127.0.0.1:9/mcp",
				"--jwt-jwks", keys.URL + "/jwks.json", "--jwt-issuer", "https://issuer.example", "--jwt-audience", "mcp-gateway"}, tc.audit...)
			p := startGateway(t, gwBin, 0, args...)
			for deadline := time.Now().Add(20 * time.Second); !asked.Load(); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the gateway did not fetch its JWK Set; stderr:\n%s", p.stderr)
				}
			}
			if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-p.done:
				p.done <- err
				t.Fatalf("SIGHUP during the JWK Set's first fetch ended the gateway (%v); stderr:\n%s", err, p.stderr)
			case <-time.After(500 * time.Millisecond):
			}
			if code := p.stopAndWait(t, syscall.SIGTERM, 5*time.Second); code != 0 {
				t.Errorf("exit status %d after SIGHUP then SIGTERM during the start, want 0; stderr:\n%s", code, p.stderr)
			}
			if s := p.stderr.String(); !strings.Contains(s, "SIGHUP") || !strings.Contains(s, "stopped by a signal before serving") {
				t.Errorf("stderr does not log the SIGHUP, or does not say the start was stopped:\n%s", s)
			}
		})
	}
}
