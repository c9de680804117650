package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestReview27BusyPortCreatesNothing: serve-http on a port already in use
// fails (exit 1) before it creates the audit directory or its files: the
// port was taken after they were, so a mistyped --port left an empty
// audit trail behind (and on a shared dir, an audit.db of the schema).
func TestReview27BusyPortCreatesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	dir := filepath.Join(t.TempDir(), "audit")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve-http", "--port", port, "--audit-dir", dir}, &stdout, &stderr); code != 1 {
		t.Fatalf("serve-http on a busy port: exit %d, want 1; stderr:\n%s", code, &stderr)
	}
	if !bytes.Contains(stderr.Bytes(), []byte("address already in use")) {
		t.Errorf("stderr does not say the port is in use:\n%s", &stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(dir)
		t.Errorf("the audit directory exists after the failed start (%v): %v", err, entries)
	}
}
