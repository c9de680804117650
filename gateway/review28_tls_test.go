package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a leaf certificate of ca for 127.0.0.1, for a server or a
// client, valid from notBefore to notAfter.
func (ca *testCA) issue(t *testing.T, client bool, notBefore, notAfter time.Time) tls.Certificate {
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
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// mtlsDownstream starts a recording downstream over TLS with a server
// certificate of serverCA, requiring client certificates of clientCA; it
// counts the connections accepted and the handshakes completed.
func mtlsDownstream(t *testing.T, serverCA, clientCA *testCA) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	var conns, handshakes atomic.Int64
	srv := httptest.NewUnstartedServer(&downstream{})
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{serverCA.issue(t, false, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCA.pool,
		VerifyConnection: func(tls.ConnectionState) error {
			handshakes.Add(1)
			return nil
		},
	}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &conns, &handshakes
}

// TestReview28TLSClientCertificate: with Options.TLSConfig, the gateway's
// own client reaches a downstream behind a private CA that requires client
// certificates; a wrong root, no client certificate, one of another CA, an
// expired one or a server name that does not match fail the call with
// -32003 (502) and a log line saying TLS.
func TestReview28TLSClientCertificate(t *testing.T) {
	serverCA, clientCA, otherCA := newTestCA(t, "server-ca"), newTestCA(t, "client-ca"), newTestCA(t, "other-ca")
	down, _, _ := mtlsDownstream(t, serverCA, clientCA)
	now := time.Now()
	good := clientCA.issue(t, true, now.Add(-time.Hour), now.Add(time.Hour))
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		ok   bool
		big  bool // a body of 2 MiB, whose write the refusal breaks
	}{
		{"right_ca_and_cert", &tls.Config{RootCAs: serverCA.pool, Certificates: []tls.Certificate{good}}, true, false},
		{"system_roots", &tls.Config{Certificates: []tls.Certificate{good}}, false, false},
		{"wrong_ca", &tls.Config{RootCAs: otherCA.pool, Certificates: []tls.Certificate{good}}, false, false},
		{"no_client_cert", &tls.Config{RootCAs: serverCA.pool}, false, false},
		{"no_client_cert_big_body", &tls.Config{RootCAs: serverCA.pool}, false, true},
		{"cert_of_another_ca", &tls.Config{RootCAs: serverCA.pool,
			Certificates: []tls.Certificate{otherCA.issue(t, true, now.Add(-time.Hour), now.Add(time.Hour))}}, false, false},
		{"expired_cert", &tls.Config{RootCAs: serverCA.pool,
			Certificates: []tls.Certificate{clientCA.issue(t, true, now.Add(-2*time.Hour), now.Add(-time.Hour))}}, false, false},
		{"server_name_mismatch", &tls.Config{RootCAs: serverCA.pool, Certificates: []tls.Certificate{good},
			ServerName: "other.example"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuf
			g, err := New(down.URL+"/mcp", DemoTokens(), &Options{TLSConfig: tc.cfg,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			rg := &rig{url: newServer(t, g).URL}
			args := `{}`
			if tc.big {
				args = `{"pad":"` + strings.Repeat("x", 2<<20) + `"}`
			}
			r := rg.post(t, viewer, call("1", "get_refund", args))
			if tc.ok {
				if r.status != http.StatusOK || strings.Contains(r.body, `"error"`) {
					t.Fatalf("got %d %s, want the downstream's answer; logs:\n%s", r.status, r.body, logs.String())
				}
				return
			}
			if _, code, _ := rpcErr(t, r.body); r.status != http.StatusBadGateway || code != -32003 {
				t.Fatalf("got %d %s, want 502 with -32003", r.status, r.body)
			}
			if l := logs.String(); !strings.Contains(l, "upstream error") || !strings.Contains(l, "TLS") {
				t.Fatalf("the log does not say TLS:\n%s", l)
			}
		})
	}
}

// TestReview28TLSReuse: many calls through the gateway's own client over
// TLS take one connection and one handshake.
func TestReview28TLSReuse(t *testing.T) {
	serverCA, clientCA := newTestCA(t, "server-ca"), newTestCA(t, "client-ca")
	down, conns, handshakes := mtlsDownstream(t, serverCA, clientCA)
	cert := clientCA.issue(t, true, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(),
		TLSConfig: &tls.Config{RootCAs: serverCA.pool, Certificates: []tls.Certificate{cert}}})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	for i := range 20 {
		if r := rg.post(t, viewer, call("1", "get_refund", `{}`)); r.status != http.StatusOK {
			t.Fatalf("call %d: got %d %s", i, r.status, r.body)
		}
	}
	if c, h := conns.Load(), handshakes.Load(); c != 1 || h != 1 {
		t.Fatalf("20 calls took %d connections and %d handshakes, want 1 and 1", c, h)
	}
}

// TestReview28TLSOptions: TLSConfig is refused with a Transport (which has
// its own) and with an http upstream (it would be ignored); it is cloned,
// and its MinVersion is at least TLS 1.2 unless the caller set one.
func TestReview28TLSOptions(t *testing.T) {
	if _, err := New("https://127.0.0.1:1/mcp", DemoTokens(), &Options{TLSConfig: &tls.Config{}, Transport: NewTransport()}); err == nil ||
		!strings.Contains(err.Error(), "TLSConfig") || !strings.Contains(err.Error(), "Transport") {
		t.Errorf("TLSConfig with a Transport: got %v, want an error naming both", err)
	}
	if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{TLSConfig: &tls.Config{}}); err == nil ||
		!strings.Contains(err.Error(), "TLSConfig") || !strings.Contains(err.Error(), "https") {
		t.Errorf("TLSConfig with an http upstream: got %v, want an error naming TLSConfig and https", err)
	}
	cfg := &tls.Config{ServerName: "a.example"}
	g, err := New("https://127.0.0.1:1/mcp", DemoTokens(), &Options{TLSConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	own := g.rt.(*upstreamClient).tlsConfig
	if own == cfg || own.MinVersion != tls.VersionTLS12 || own.ServerName != "a.example" {
		t.Errorf("got config %p (caller's %p), MinVersion %#x, ServerName %q; want a clone with TLS 1.2 and a.example", own, cfg, own.MinVersion, own.ServerName)
	}
	if cfg.MinVersion != 0 {
		t.Errorf("the caller's config was changed: MinVersion %#x", cfg.MinVersion)
	}
	g, err = New("https://127.0.0.1:1/mcp", DemoTokens(), &Options{TLSConfig: &tls.Config{MinVersion: tls.VersionTLS13}})
	if err != nil {
		t.Fatal(err)
	}
	if v := g.rt.(*upstreamClient).tlsConfig.MinVersion; v != tls.VersionTLS13 {
		t.Errorf("MinVersion %#x, want the caller's TLS 1.3", v)
	}
}
