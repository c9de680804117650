package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tlsCA is a certificate authority made for a test.
type tlsCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTLSCA(t *testing.T) *tlsCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &tlsCA{cert: cert, key: key}
}

func (ca *tlsCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func (ca *tlsCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// issue returns a leaf of ca for 127.0.0.1 (a client's or a server's),
// valid until notAfter, as a tls.Certificate and as PEM cert and key.
func (ca *tlsCA) issue(t *testing.T, client bool, notAfter time.Time) (tls.Certificate, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

func writeFile(t *testing.T, dir, name string, data []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

// TestReview28UpstreamTLSFlags checks the files of --upstream-ca,
// --upstream-cert and --upstream-key: each mistake is a usage error
// naming its flag; a key file every user may read is warned about.
func TestReview28UpstreamTLSFlags(t *testing.T) {
	dir := t.TempDir()
	ca := newTLSCA(t)
	_, certPEM, keyPEM := ca.issue(t, true, time.Now().Add(time.Hour))
	_, oldPEM, oldKeyPEM := ca.issue(t, true, time.Now().Add(-time.Hour))
	_, _, otherKeyPEM := ca.issue(t, true, time.Now().Add(time.Hour))
	caFile := writeFile(t, dir, "ca.pem", ca.pem(), 0o644)
	certFile := writeFile(t, dir, "c.pem", certPEM, 0o644)
	keyFile := writeFile(t, dir, "k.pem", keyPEM, 0o600)
	openKey := writeFile(t, dir, "open.pem", keyPEM, 0o644)
	oldFile := writeFile(t, dir, "old.pem", oldPEM, 0o644)
	oldKey := writeFile(t, dir, "oldk.pem", oldKeyPEM, 0o600)
	otherKey := writeFile(t, dir, "otherk.pem", otherKeyPEM, 0o600)
	garbage := writeFile(t, dir, "garbage.pem", []byte("not a certificate\n"), 0o644)
	keyAsCA := writeFile(t, dir, "keyasca.pem", keyPEM, 0o600)
	https, _ := url.Parse("https://127.0.0.1:8443/mcp")
	plain, _ := url.Parse("http://10.0.0.1:8081/mcp")
	for _, tc := range []struct {
		name            string
		up              *url.URL
		ca, cert, key   string
		wantErr, inErr  string // wantErr "": no error
		wantWarn, roots bool
	}{
		{name: "none", up: plain},
		{name: "ca_only", up: https, ca: caFile, roots: true},
		{name: "cert_and_key", up: https, cert: certFile, key: keyFile},
		{name: "all", up: https, ca: caFile, cert: certFile, key: keyFile, roots: true},
		{name: "key_readable_by_all", up: https, cert: certFile, key: openKey, wantWarn: true},
		{name: "http_upstream", up: plain, ca: caFile, wantErr: "--upstream-ca", inErr: "https"},
		{name: "http_upstream_cert", up: plain, cert: certFile, key: keyFile, wantErr: "--upstream-cert, --upstream-key", inErr: "https"},
		{name: "cert_without_key", up: https, cert: certFile, wantErr: "--upstream-cert", inErr: "--upstream-key"},
		{name: "key_without_cert", up: https, key: keyFile, wantErr: "--upstream-key", inErr: "--upstream-cert"},
		{name: "missing_ca", up: https, ca: filepath.Join(dir, "nope.pem"), wantErr: "--upstream-ca", inErr: "no such file"},
		{name: "garbage_ca", up: https, ca: garbage, wantErr: "--upstream-ca", inErr: "no PEM certificate"},
		{name: "key_as_ca", up: https, ca: keyAsCA, wantErr: "--upstream-ca", inErr: "PRIVATE KEY"},
		{name: "missing_cert", up: https, cert: filepath.Join(dir, "nope.pem"), key: keyFile, wantErr: "--upstream-cert", inErr: "no such file"},
		{name: "missing_key", up: https, cert: certFile, key: filepath.Join(dir, "nope.pem"), wantErr: "--upstream-key", inErr: "no such file"},
		{name: "key_of_another_cert", up: https, cert: certFile, key: otherKey, wantErr: "--upstream-cert", inErr: "private key does not match"},
		{name: "garbage_cert", up: https, cert: garbage, key: keyFile, wantErr: "--upstream-cert", inErr: "--upstream-key"},
		{name: "expired_cert", up: https, cert: oldFile, key: oldKey, wantErr: "--upstream-cert", inErr: "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			cfg, err := upstreamTLS(slog.New(slog.NewTextHandler(&logs, nil)), tc.up, tc.ca, tc.cert, tc.key, time.Now())
			if tc.wantErr != "" {
				var ue usageError
				if err == nil || !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.inErr) {
					t.Fatalf("got %v, want a usage error beginning %q and holding %q", err, tc.wantErr, tc.inErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.ca == "" && tc.cert == "" {
				if cfg != nil {
					t.Fatalf("got a config without TLS flags")
				}
				return
			}
			if cfg.MinVersion != tls.VersionTLS12 || (cfg.RootCAs != nil) != tc.roots || len(cfg.Certificates) != map[bool]int{true: 1}[tc.cert != ""] {
				t.Errorf("config: MinVersion %#x, roots %v, %d certificates", cfg.MinVersion, cfg.RootCAs != nil, len(cfg.Certificates))
			}
			if w := strings.Contains(logs.String(), "--upstream-key"); w != tc.wantWarn {
				t.Errorf("warned %v, want %v: %s", w, tc.wantWarn, logs.String())
			}
		})
	}
}

// mtlsMCP starts a go-sdk MCP server over TLS with a certificate of ca,
// requiring a client certificate of clientCA.
func mtlsMCP(t *testing.T, ca, clientCA *tlsCA) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "down", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup"}, func(context.Context, *mcp.CallToolRequest, pinArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	down := httptest.NewUnstartedServer(h)
	cert, _, _ := ca.issue(t, false, time.Now().Add(time.Hour))
	down.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCA.pool()}
	down.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	down.StartTLS()
	t.Cleanup(down.Close)
	return down
}

// TestReview28UpstreamTLSBinary runs the binary against a downstream
// behind a private CA that requires client certificates: with the right
// --upstream-ca, --upstream-cert and --upstream-key a call gets through,
// with --std-transport too, and --print-pins lists the tools; a wrong CA,
// or no client certificate, stops the start (status 1, the message saying
// TLS and naming the flags); a mistake in the flags stops it with status
// 2.
func TestReview28UpstreamTLSBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "gateway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	serverCA, clientCA, otherCA := newTLSCA(t), newTLSCA(t), newTLSCA(t)
	down := mtlsMCP(t, serverCA, clientCA)
	upstream := down.URL + "/mcp"
	_, certPEM, keyPEM := clientCA.issue(t, true, time.Now().Add(time.Hour))
	caFile := writeFile(t, dir, "ca.pem", serverCA.pem(), 0o644)
	otherCAFile := writeFile(t, dir, "other.pem", otherCA.pem(), 0o644)
	certFile := writeFile(t, dir, "c.pem", certPEM, 0o644)
	keyFile := writeFile(t, dir, "k.pem", keyPEM, 0o600)
	tlsFlags := []string{"--upstream-ca", caFile, "--upstream-cert", certFile, "--upstream-key", keyFile}

	run := func(args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "MCP_GATEWAY_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String() + stderr.String()
	}
	base := []string{"--host", "127.0.0.1", "--port", "0", "--upstream", upstream, "--timeout", "5"}
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		want   []string
	}{
		{"wrong_ca", []string{"--upstream-ca", otherCAFile, "--upstream-cert", certFile, "--upstream-key", keyFile}, 1,
			[]string{"TLS handshake", "--upstream-ca, --upstream-cert, --upstream-key", "unknown authority"}},
		{"no_client_cert", []string{"--upstream-ca", caFile}, 1, []string{"TLS", "--upstream-ca", "certificate required"}},
		{"cert_without_key", []string{"--upstream-cert", certFile}, 2, []string{"--upstream-cert without --upstream-key"}},
		{"missing_ca", []string{"--upstream-ca", filepath.Join(dir, "nope")}, 2, []string{"--upstream-ca", "no such file"}},
		{"invalid_ca", []string{"--upstream-ca", keyFile}, 2, []string{"--upstream-ca", "PRIVATE KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := run(append(base, tc.args...)...)
			if status != tc.status {
				t.Fatalf("exit status %d, want %d:\n%s", status, tc.status, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not say %q:\n%s", w, out)
				}
			}
		})
	}

	t.Run("http_upstream", func(t *testing.T) {
		status, out := run("--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--upstream-ca", caFile)
		if status != 2 || !strings.Contains(out, "--upstream-ca: only with an https --upstream") {
			t.Fatalf("--upstream-ca with an http upstream: status %d, want 2 naming the flag:\n%s", status, out)
		}
	})

	t.Run("print_pins", func(t *testing.T) {
		status, out := run(append([]string{"--print-pins", "--upstream", upstream}, tlsFlags...)...)
		if status != 0 || !strings.Contains(out, `"lookup"`) {
			t.Fatalf("--print-pins with the TLS flags: status %d:\n%s", status, out)
		}
	})

	for _, std := range []bool{false, true} {
		t.Run(map[bool]string{false: "own_client", true: "std_transport"}[std], func(t *testing.T) {
			port := loopbackPort(t)
			args := append([]string{"--host", "127.0.0.1", "--port", port, "--upstream", upstream, "--timeout", "5", "--pin-tools"}, tlsFlags...)
			if std {
				args = append(args, "--std-transport")
			}
			logs := startBinary(t, bin, args...)
			gw := "http://127.0.0.1:" + port
			awaitHealthy(t, gw+"/healthz", logs)
			for _, w := range []string{"TLS to the downstream checked at start", "tool pins: the downstream's tools checked at start"} {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("the start log does not say %q:\n%s", w, logs)
				}
			}
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup","arguments":{"id":"x"}}}`
			req, _ := http.NewRequest(http.MethodPost, gw+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer viewer-token")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "found") {
				t.Fatalf("a call through the gateway: %d %s\nlogs:\n%s", resp.StatusCode, b, logs)
			}
		})
	}
}
