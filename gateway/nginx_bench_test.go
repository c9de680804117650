package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkVersusNginx puts the gateway and nginx (proxy_pass to a
// keepalive upstream, which authorizes nothing) in front of the same go-sdk
// stateless JSON server and measures all three paths in the same run,
// in rotating rounds, at 1 and 32 concurrent clients. It needs the nginx
// binary (Debian package nginx-light or nginx) and skips without it; it is
// a benchmark, so CI never runs it.
//
//	go test ./gateway -run '^$' -bench BenchmarkVersusNginx -benchtime 12000x -count 3
func BenchmarkVersusNginx(b *testing.B) {
	bin := nginxBinary(b)
	down := newBenchServer(b, echoHandler())
	g, err := New(down+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	gw := newBenchServer(b, g)
	ngx, _ := startNginx(b, bin, strings.TrimPrefix(down, "http://"))

	body := echoCall
	client := &http.Client{Transport: NewTransport()}
	for _, clients := range []int{1, 32} {
		b.Run("clients="+itoa(clients), func(b *testing.B) {
			var direct, via, nginx result
			// Short rounds, the order of the three paths rotating from
			// one round to the next, so that the drift of a shared
			// machine hits all three alike, after a round that warms the
			// process up.
			const rounds = 9
			n := b.N/rounds + 1
			warm(b, client, body, clients, n, benchPath{down, ""}, benchPath{gw, "Bearer viewer-token"}, benchPath{ngx, ""})
			paths := []func(){
				func() { direct.add(load(b, client, down+"/mcp", "", body, clients, n)) },
				func() { via.add(load(b, client, gw+"/mcp", "Bearer viewer-token", body, clients, n)) },
				func() { nginx.add(load(b, client, ngx+"/mcp", "", body, clients, n)) },
			}
			for round := range rounds {
				for i := range paths {
					paths[(round+i)%len(paths)]()
				}
			}
			b.ReportMetric(via.opsPerSec()/direct.opsPerSec(), "gw/direct")
			b.ReportMetric(nginx.opsPerSec()/direct.opsPerSec(), "nginx/direct")
			b.ReportMetric(via.opsPerSec()/nginx.opsPerSec(), "gw/nginx")
			b.ReportMetric(via.p50()-direct.p50(), "gw_added_p50_µs")
			b.ReportMetric(nginx.p50()-direct.p50(), "nginx_added_p50_µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// startNginx runs nginx in the foreground with a proxy_pass to upstream
// (host:port) over keepalive connections, on a free loopback port, and
// stops it at cleanup. It returns its base URL and the master process id
// (the workers are its children).
func startNginx(b *testing.B, bin, upstream string) (string, int) {
	b.Helper()
	dir := b.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	conf := fmt.Sprintf(`worker_processes auto;
daemon off;
user root root;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	upstream down { server %[2]s; keepalive 64; }
	server {
		listen %[3]s;
		location / {
			proxy_pass http://down;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host localhost;
		}
	}
}
`, dir, upstream, addr)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", path, "-p", dir, "-e", filepath.Join(dir, "error.log"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return "http://" + addr, cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			b.Fatalf("nginx did not listen on %s: %v\n%s", addr, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nginxBinary returns the path of nginx, or skips b without it.
func nginxBinary(b *testing.B) string {
	b.Helper()
	if bin, err := exec.LookPath("nginx"); err == nil {
		return bin
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
		b.Skip("nginx not found: install the Debian package nginx-light")
	}
	return "/usr/sbin/nginx"
}
