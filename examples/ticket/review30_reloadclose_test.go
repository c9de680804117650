package main

import (
	"bytes"
	"log/slog"
	"testing"
)

// TestReview30ReloadAfterClose: at shutdown the server is closed before
// the SIGHUP handler stops; a SIGHUP in between reloaded the file into a
// closed app and logged that calls are decided by it from now on. Once
// closing, a SIGHUP reloads nothing and says so.
func TestReview30ReloadAfterClose(t *testing.T) {
	ta := newTestApp(t, nil)
	var logs bytes.Buffer
	rl := &reloader{log: slog.New(slog.NewTextHandler(&logs, nil)), path: "server.yaml"}
	rl.made(ta.app)
	rl.closing()
	rl.hangup()
	if bytes.Contains(logs.Bytes(), []byte("reloaded")) || bytes.Contains(logs.Bytes(), []byte("during the start")) {
		t.Fatalf("a SIGHUP after closing:\n%s", logs.String())
	}
	if !bytes.Contains(logs.Bytes(), []byte("shutting down")) {
		t.Fatalf("a SIGHUP after closing not logged as such:\n%s", logs.String())
	}
}
