package redisaddr

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/redis/go-redis/v9"
)

const testPasswordEnv = "TEST_REDIS_PASSWORD"

// TestReview30FlagURL: --redis takes a redis:// or rediss:// URL as well
// as host:port: a user name (with the password from the environment), a
// database number, TLS for rediss:// (verified, TLS 1.2 or later, for the
// URL's host); every form gets the client's no-retry, context-bounded
// options.
func TestReview30FlagURL(t *testing.T) {
	type got struct {
		Addr, Username, Password string
		DB                       int
		TLS                      bool
		ServerName               string
		MinVersion               uint16
	}
	for _, tc := range []struct {
		name, value, password string
		want                  got
	}{
		{"host_port", "127.0.0.1:6379", "", got{Addr: "127.0.0.1:6379"}},
		{"host_port_password", "127.0.0.1:6379", "pw", got{Addr: "127.0.0.1:6379", Password: "pw"}},
		{"url", "redis://127.0.0.1:6380", "", got{Addr: "127.0.0.1:6380"}},
		{"url_default_port", "redis://redis.internal", "", got{Addr: "redis.internal:6379"}},
		{"url_db", "redis://127.0.0.1:6380/3", "", got{Addr: "127.0.0.1:6380", DB: 3}},
		{"url_slash", "redis://127.0.0.1:6380/", "", got{Addr: "127.0.0.1:6380"}},
		{"url_user", "redis://app@127.0.0.1:6380/1", "pw", got{Addr: "127.0.0.1:6380", Username: "app", Password: "pw", DB: 1}},
		{"url_ipv6", "redis://[::1]:6380", "", got{Addr: "[::1]:6380"}},
		{"tls", "rediss://redis.example:6380", "pw", got{Addr: "redis.example:6380", Password: "pw", TLS: true,
			ServerName: "redis.example", MinVersion: tls.VersionTLS12}},
		{"tls_ip", "rediss://127.0.0.1:6380/2", "", got{Addr: "127.0.0.1:6380", DB: 2, TLS: true,
			ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Flag{Value: tc.value, Password: tc.password, PasswordEnv: testPasswordEnv}
			o, err := f.Options()
			if err != nil {
				t.Fatalf("Options(%q): %v", tc.value, err)
			}
			g := got{Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLS: o.TLSConfig != nil}
			if o.TLSConfig != nil {
				g.ServerName, g.MinVersion = o.TLSConfig.ServerName, o.TLSConfig.MinVersion
				if o.TLSConfig.InsecureSkipVerify || o.TLSConfig.RootCAs != nil {
					t.Errorf("Options(%q): TLS skips verification or has its own roots: %+v", tc.value, o.TLSConfig)
				}
			}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("Options(%q) (-want +got):\n%s", tc.value, diff)
			}
			if o.MaxRetries != -1 || !o.ContextTimeoutEnabled {
				t.Errorf("Options(%q): MaxRetries %d, ContextTimeoutEnabled %v; want -1, true", tc.value, o.MaxRetries, o.ContextTimeoutEnabled)
			}
		})
	}
}

// TestReview30FlagURLRefused: a URL with a password (in its user info, or
// as a query's option) is refused with an error naming the variable the
// password goes in; a user without that password (go-redis would connect
// as the default user), options in a query (skip_verify, max_retries), a
// fragment, a path that is not a database number, another scheme and a
// malformed URL are refused too. No error shows the value, nor the secret
// in it.
func TestReview30FlagURLRefused(t *testing.T) {
	for _, tc := range []struct {
		name, value, password string
		want                  []string
	}{
		{"password", "redis://app:s3cret@127.0.0.1:6379", "", []string{"password", testPasswordEnv, "command line"}},
		{"password_only", "redis://:s3cret@127.0.0.1:6379", "pw", []string{"password", testPasswordEnv}},
		{"password_empty", "rediss://app:@127.0.0.1:6379", "pw", []string{"password", testPasswordEnv}},
		{"password_no_scheme", "app:s3cret@127.0.0.1:6379", "", []string{"user info", testPasswordEnv}},
		{"user_without_password", "redis://app@127.0.0.1:6379", "", []string{"user", testPasswordEnv, "empty"}},
		{"empty_user", "redis://@127.0.0.1:6379", "pw", []string{"user"}},
		{"query_password", "redis://127.0.0.1:6379?password=s3cret", "", []string{"query", testPasswordEnv}},
		{"skip_verify", "rediss://127.0.0.1:6379?skip_verify=true", "", []string{"query", "verified"}},
		{"max_retries", "redis://127.0.0.1:6379/0?max_retries=3", "", []string{"query"}},
		{"empty_query", "redis://127.0.0.1:6379?", "", []string{"query"}},
		{"fragment", "redis://127.0.0.1:6379#s3cret", "", []string{"fragment"}},
		{"empty_fragment", "redis://127.0.0.1:6379#", "", []string{"fragment"}},
		{"db_word", "redis://127.0.0.1:6379/s3cret", "", []string{"database number"}},
		{"db_negative", "redis://127.0.0.1:6379/-1", "", []string{"database number"}},
		{"db_two", "redis://127.0.0.1:6379/0/1", "", []string{"database number"}},
		{"db_huge", "redis://127.0.0.1:6379/99999999999", "", []string{"database number"}},
		{"no_host", "redis:///0", "", []string{"no host"}},
		{"no_host_port", "redis://:6379", "", []string{"no host"}},
		{"port_zero", "redis://127.0.0.1:0", "", []string{"port"}},
		{"port_big", "redis://127.0.0.1:65536", "", []string{"port"}},
		{"port_empty", "redis://127.0.0.1:", "", []string{"port"}},
		{"port_word", "redis://127.0.0.1:s3cret", "", []string{"not a valid URL"}},
		{"host_unicode", "redis://bücher.example:6379", "", []string{"xn--"}},
		{"unix", "unix:///tmp/s3cret.sock", "", []string{"scheme"}},
		{"http", "http://user:s3cret@127.0.0.1:6379", "", []string{"scheme"}},
		{"malformed", "redis://[::1:6379/s3cret", "", []string{"not a valid URL"}},
		{"control", "redis://127.0.0.1:6379/\x1b[31ms3cret", "", []string{"not a valid URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (Flag{Value: tc.value, Password: tc.password, PasswordEnv: testPasswordEnv}).Check()
			if err == nil {
				t.Fatalf("Check(%q): nil, want an error", tc.value)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "--redis") {
				t.Errorf("Check(%q): %q, want it to name --redis", tc.value, msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Check(%q): %q, want it to say %q", tc.value, msg, w)
				}
			}
			if strings.Contains(msg, "s3cret") || strings.Contains(msg, tc.value) || strings.Contains(msg, strconv.Quote(tc.value)) {
				t.Errorf("Check(%q): %q shows the value", tc.value, msg)
			}
		})
	}
}

// redisCLI runs one command on the Redis at addr as the default user with
// password pw ("" for none).
func redisCLI(t *testing.T, addr, pw string, args ...any) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Password: pw, MaxRetries: -1})
	defer c.Close()
	if err := c.Do(t.Context(), args...).Err(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}

// TestReview30DialPassword: on a Redis with a password (requirepass) and
// an ACL user, Dial without the password fails at its PING with an error
// that names the variable, and so does a wrong password; the password of
// the flag (as from the variable) connects, with host:port and with a
// URL, whose database number and user are used.
func TestReview30DialPassword(t *testing.T) {
	rd := testsvc.StartRedis(t)
	redisCLI(t, rd.Addr, "", "acl", "setuser", "app", "on", ">app-pw", "~*", "&*", "+@all")
	redisCLI(t, rd.Addr, "", "config", "set", "requirepass", "default-pw")

	for _, tc := range []struct {
		name, value, password string
		want                  []string
	}{
		{"no_password", rd.Addr, "", []string{"NOAUTH", testPasswordEnv, "empty"}},
		{"wrong_password", rd.Addr, "not-it", []string{"WRONGPASS", testPasswordEnv}},
		{"user_wrong_password", "redis://app@" + rd.Addr, "default-pw", []string{"WRONGPASS", testPasswordEnv}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := (Flag{Value: tc.value, Password: tc.password, PasswordEnv: testPasswordEnv}).Dial(2 * time.Second)
			if err == nil {
				t.Fatalf("Dial(%q): nil, want an error", tc.value)
			}
			for _, w := range append(tc.want, "--redis") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Dial(%q): %q, want it to say %q", tc.value, err, w)
				}
			}
			if tc.password != "" && strings.Contains(err.Error(), tc.password) {
				t.Errorf("Dial(%q): %q shows the password", tc.value, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Dial(%q) took %v", tc.value, d)
			}
		})
	}

	for _, tc := range []struct {
		name, value, password string
		db                    int
		user                  string
	}{
		{"host_port", rd.Addr, "default-pw", 0, "default"},
		{"url_db", "redis://" + rd.Addr + "/2", "default-pw", 2, "default"},
		{"url_user", "redis://app@" + rd.Addr + "/3", "app-pw", 3, "app"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb, err := (Flag{Value: tc.value, Password: tc.password, PasswordEnv: testPasswordEnv}).Dial(2 * time.Second)
			if err != nil {
				t.Fatalf("Dial(%q): %v", tc.value, err)
			}
			defer rdb.Close()
			ctx := t.Context()
			if who, err := rdb.Do(ctx, "acl", "whoami").Text(); err != nil || who != tc.user {
				t.Errorf("Dial(%q): ACL WHOAMI %q %v, want %q", tc.value, who, err, tc.user)
			}
			key := "review30:" + tc.name
			if err := rdb.Set(ctx, key, "x", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			check := redis.NewClient(&redis.Options{Addr: rd.Addr, Password: "default-pw", DB: tc.db})
			defer check.Close()
			if n, err := check.Exists(ctx, key).Result(); err != nil || n != 1 {
				t.Errorf("Dial(%q): the key is not in database %d (%d, %v)", tc.value, tc.db, n, err)
			}
		})
	}
}

// tlsRedis is a redis-server that takes only TLS connections, with a
// certificate for 127.0.0.1 from its own CA.
type tlsRedis struct {
	addr  string
	roots *x509.CertPool // the CA
}

// startTLSRedis starts a redis-server on a free loopback port that takes
// only TLS (no client certificate asked) and the password pw, and stops
// it when t ends. It skips t (fails it under testsvc.RequireEnv) when
// redis-server lacks TLS.
func startTLSRedis(t *testing.T, pw string) *tlsRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testsvc.Missing(t, "redis-server not found: install the Debian package redis-server")
	}
	dir := t.TempDir()
	roots := writeCerts(t, dir)
	for range 5 {
		port := freePort(t)
		cmd := exec.Command(bin, "--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--tls-cert-file", filepath.Join(dir, "server.pem"), "--tls-key-file", filepath.Join(dir, "server.key"),
			"--tls-ca-cert-file", filepath.Join(dir, "ca.pem"), "--tls-auth-clients", "no",
			"--requirepass", pw, "--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-exited })
		r := &tlsRedis{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), roots: roots}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			select {
			case <-exited:
				if strings.Contains(out.String(), "tls") && strings.Contains(out.String(), "not") {
					testsvc.Missing(t, "redis-server without TLS: "+out.String())
				}
				deadline = time.Time{}
				continue
			default:
			}
			c, err := tls.Dial("tcp", r.addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
			if err == nil {
				c.Close()
				return r
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatal("redis-server with TLS did not start")
	return nil
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// writeCerts writes ca.pem, server.pem and server.key (a certificate for
// the IP address 127.0.0.1 only) to dir and returns the CA's pool.
func writeCerts(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "review30 test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*pem.Block{
		"ca.pem":     {Type: "CERTIFICATE", Bytes: caDER},
		"server.pem": {Type: "CERTIFICATE", Bytes: der},
		"server.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	return roots
}

// TestReview30DialTLS: rediss:// connects over TLS to a Redis whose
// certificate verifies (its CA given as the roots) with the password; the
// same server is refused under the system's roots (an unknown CA), under
// a host name its certificate does not name, and without the password; a
// plain redis:// URL to its TLS port does not connect.
func TestReview30DialTLS(t *testing.T) {
	r := startTLSRedis(t, "tls-pw")
	_, port, _ := net.SplitHostPort(r.addr)
	ok := Flag{Value: "rediss://" + r.addr + "/1", Password: "tls-pw", PasswordEnv: testPasswordEnv, roots: r.roots}
	rdb, err := ok.Dial(2 * time.Second)
	if err != nil {
		t.Fatalf("rediss:// with the CA and the password: %v", err)
	}
	if err := rdb.Set(context.Background(), "review30", "x", time.Minute).Err(); err != nil {
		t.Errorf("SET over TLS: %v", err)
	}
	rdb.Close()

	// The system's roots are loaded once per process, the first time a
	// certificate is verified against them: seconds under -race on a busy
	// machine, which is no part of what Dial's timeout bounds here.
	if _, err := x509.SystemCertPool(); err != nil {
		t.Logf("system roots: %v", err)
	}
	for _, tc := range []struct {
		name string
		f    Flag
		want string
	}{
		{"system_roots", Flag{Value: "rediss://" + r.addr, Password: "tls-pw", PasswordEnv: testPasswordEnv}, "certificate"},
		{"wrong_name", Flag{Value: "rediss://localhost:" + port, Password: "tls-pw", PasswordEnv: testPasswordEnv, roots: r.roots}, "certificate"},
		{"no_password", Flag{Value: "rediss://" + r.addr, PasswordEnv: testPasswordEnv, roots: r.roots}, testPasswordEnv},
		{"plain", Flag{Value: "redis://" + r.addr, Password: "tls-pw", PasswordEnv: testPasswordEnv, roots: r.roots}, "--redis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Long enough for the client's five dial attempts (each a
			// handshake, 100 ms apart) to fail on a busy machine before it
			// ends: a refusal must say why, not that time ran out.
			const timeout = 10 * time.Second
			start := time.Now()
			rdb, err := tc.f.Dial(timeout)
			if err == nil {
				rdb.Close()
				t.Fatalf("Dial(%q): nil, want an error", tc.f.Value)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "tls-pw") {
				t.Errorf("Dial(%q): %q, want it to say %q and not the password", tc.f.Value, err, tc.want)
			}
			if d := time.Since(start); d > timeout+time.Second {
				t.Errorf("Dial(%q) took %v", tc.f.Value, d)
			}
		})
	}
}
