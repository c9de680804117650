package gateway

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// downstreamEnv makes the test binary serve the benchmark's downstream (see
// TestDownstreamProcess) on the address it names.
const downstreamEnv = "MCPGUARD_BENCH_DOWNSTREAM"

// TestDownstreamProcess is not a test: run by BenchmarkProcessesVersusNginx
// as a child process with downstreamEnv set, it serves a go-sdk stateless
// JSON server with one echo tool until it is killed. Without the variable it
// returns at once.
func TestDownstreamProcess(t *testing.T) {
	addr := os.Getenv(downstreamEnv)
	if addr == "" {
		return
	}
	if err := http.ListenAndServe(addr, echoHandler()); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkProcessesVersusNginx is BenchmarkVersusNginx with every party in
// its own process, as in a deployment: the downstream (this test binary
// re-executed as a go-sdk stateless JSON server), the gateway (the
// examples/gateway binary) and nginx (proxy_pass to a keepalive upstream);
// this process only generates the load. The gateway runs three times: as
// built (gw: its own upstream client, quiet sysmon), the same with
// GOMAXPROCS=1 (gw1), and as it was (gwstd: net/http's Transport with
// --std-transport, the runtime's default sysmon with GODEBUG=schedtrace=0).
// A bare httputil.ReverseProxy
// process (gateway/internal/stdproxy) runs beside them as the cost of any
// Go reverse proxy process on the machine. Same run, alternating rounds, 1 and
// 32 concurrent clients. Skips without nginx (Debian package nginx-light).
//
//	go test ./gateway -run '^$' -bench BenchmarkProcessesVersusNginx -benchtime 12000x -count 3
func BenchmarkProcessesVersusNginx(b *testing.B) {
	bin := nginxBinary(b)
	dir := b.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	gwBin, stdBin := filepath.Join(dir, "gateway"), filepath.Join(dir, "stdproxy")
	for bin, pkg := range map[string]string{gwBin: "./examples/gateway", stdBin: "./gateway/internal/stdproxy"} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}

	downAddr := freeAddr(b)
	child := exec.Command(os.Args[0], "-test.run=^TestDownstreamProcess$")
	child.Env = append(os.Environ(), downstreamEnv+"="+downAddr)
	startProcess(b, child)
	down := "http://" + downAddr
	waitListening(b, downAddr)

	gwEnv := withoutEnv(os.Environ(), TokensEnv) // the demo tokens
	gw := serveProcess(b, gwEnv, gwBin, "--upstream", down+"/mcp")
	// The same gateway as it was: sending downstream through net/http's
	// Transport, with the Go runtime's default sysmon.
	gwStd := serveProcess(b, append(withoutEnv(gwEnv, "GODEBUG"), "GODEBUG=schedtrace=0"), gwBin, "--upstream", down+"/mcp", "--std-transport")
	// The same gateway on one P (GOMAXPROCS=1): on a small machine shared
	// with its downstream and clients, fewer handoffs between OS threads.
	gw1 := serveProcess(b, append(withoutEnv(gwEnv, "GOMAXPROCS"), "GOMAXPROCS=1"), gwBin, "--upstream", down+"/mcp")
	std := serveProcess(b, nil, stdBin, "--upstream", down)

	ngx := startNginx(b, bin, downAddr)

	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"hello"}}}`
	client := &http.Client{Transport: NewTransport()}
	for _, clients := range []int{1, 32} {
		b.Run("clients="+itoa(clients), func(b *testing.B) {
			var direct, via, viaStd, via1, nginx, stdp result
			for round := 0; round < 3; round++ {
				n := b.N/3 + 1
				direct.add(load(b, client, down+"/mcp", "", body, clients, n))
				via.add(load(b, client, gw+"/mcp", "Bearer viewer-token", body, clients, n))
				viaStd.add(load(b, client, gwStd+"/mcp", "Bearer viewer-token", body, clients, n))
				via1.add(load(b, client, gw1+"/mcp", "Bearer viewer-token", body, clients, n))
				nginx.add(load(b, client, ngx+"/mcp", "", body, clients, n))
				stdp.add(load(b, client, std+"/mcp", "", body, clients, n))
			}
			b.ReportMetric(stdp.opsPerSec()/direct.opsPerSec(), "stdproxy/direct")
			b.ReportMetric(stdp.p50()-direct.p50(), "stdproxy_added_p50_µs")
			b.ReportMetric(viaStd.opsPerSec()/direct.opsPerSec(), "gwstd/direct")
			b.ReportMetric(viaStd.p50()-direct.p50(), "gwstd_added_p50_µs")
			b.ReportMetric(via1.opsPerSec()/direct.opsPerSec(), "gw1/direct")
			b.ReportMetric(via1.opsPerSec()/nginx.opsPerSec(), "gw1/nginx")
			b.ReportMetric(via1.p50()-direct.p50(), "gw1_added_p50_µs")
			b.ReportMetric(via.opsPerSec()/direct.opsPerSec(), "gw/direct")
			b.ReportMetric(nginx.opsPerSec()/direct.opsPerSec(), "nginx/direct")
			b.ReportMetric(via.opsPerSec()/nginx.opsPerSec(), "gw/nginx")
			b.ReportMetric(via.p50()-direct.p50(), "gw_added_p50_µs")
			b.ReportMetric(nginx.p50()-direct.p50(), "nginx_added_p50_µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// freeAddr returns a loopback address with a port free at the time.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// serveProcess starts bin with --host and --port of a free loopback address
// followed by args, in env (nil: this process's), and returns its URL once
// something listens there.
func serveProcess(b *testing.B, env []string, bin string, args ...string) string {
	b.Helper()
	addr := freeAddr(b)
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, append([]string{"--host", host, "--port", port}, args...)...)
	cmd.Env = env
	startProcess(b, cmd)
	waitListening(b, addr)
	return "http://" + addr
}

// startProcess starts cmd and kills it at cleanup.
func startProcess(b *testing.B, cmd *exec.Cmd) {
	b.Helper()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

func waitListening(b *testing.B, addr string) {
	b.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("nothing listens on %s", addr)
}
