package main

import (
	"errors"
	"io"
	"log/slog"
	"net/url"
	"testing"
	"time"
)

// TestReview28bUpstreamCertNoLeaf: with GODEBUG=x509keypairleaf=0 (a
// documented Go setting), tls.X509KeyPair leaves Leaf nil; the validity
// check of --upstream-cert must not dereference it (it panicked).
func TestReview28bUpstreamCertNoLeaf(t *testing.T) {
	t.Setenv("GODEBUG", "x509keypairleaf=0")
	dir := t.TempDir()
	ca := newTLSCA(t)
	_, certPEM, keyPEM := ca.issue(t, true, time.Now().Add(-time.Minute))
	certFile := writeFile(t, dir, "cert.pem", certPEM, 0o600)
	keyFile := writeFile(t, dir, "key.pem", keyPEM, 0o600)
	up, _ := url.Parse("https://127.0.0.1:8443/mcp")
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, err := upstreamTLS(logger, up, "", certFile, keyFile, time.Now())
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("an expired certificate: got %v, want a usage error", err)
	}
	_, certPEM, keyPEM = ca.issue(t, true, time.Now().Add(time.Hour))
	certFile = writeFile(t, dir, "cert2.pem", certPEM, 0o600)
	keyFile = writeFile(t, dir, "key2.pem", keyPEM, 0o600)
	cfg, err := upstreamTLS(logger, up, "", certFile, keyFile, time.Now())
	if err != nil || cfg == nil || len(cfg.Certificates) != 1 {
		t.Fatalf("got %v, %v; want the certificate", cfg, err)
	}
}
