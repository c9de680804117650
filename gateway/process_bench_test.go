package gateway

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
// 32 concurrent clients. For each proxy process it also reports, per
// request, the context switches, the CPU time and the time spent runnable
// but waiting for a CPU, read from /proc (nginx: master and workers).
// Skips without nginx (Debian package nginx-light).
//
//	go test ./gateway -run '^$' -bench BenchmarkProcessesVersusNginx -benchtime 12000x -count 3
func BenchmarkProcessesVersusNginx(b *testing.B) {
	bin := nginxBinary(b)
	gwBin, stdBin := buildProxies(b)

	downAddr := freeAddr(b)
	child := exec.Command(os.Args[0], "-test.run=^TestDownstreamProcess$")
	child.Env = append(os.Environ(), downstreamEnv+"="+downAddr)
	startProcess(b, child)
	down := "http://" + downAddr
	waitListening(b, downAddr)

	gwEnv := withoutEnv(os.Environ(), TokensEnv) // the demo tokens
	gw, gwPID := serveProcess(b, gwEnv, gwBin, "--upstream", down+"/mcp")
	// The same gateway as it was: sending downstream through net/http's
	// Transport, with the Go runtime's default sysmon.
	gwStd, gwStdPID := serveProcess(b, append(withoutEnv(gwEnv, "GODEBUG"), "GODEBUG=schedtrace=0"), gwBin, "--upstream", down+"/mcp", "--std-transport")
	// The same gateway on one P (GOMAXPROCS=1): on a small machine shared
	// with its downstream and clients, fewer handoffs between OS threads.
	gw1, gw1PID := serveProcess(b, append(withoutEnv(gwEnv, "GOMAXPROCS"), "GOMAXPROCS=1"), gwBin, "--upstream", down+"/mcp")
	std, stdPID := serveProcess(b, nil, stdBin, "--upstream", down)

	ngx, ngxPID := startNginx(b, bin, downAddr)

	body := echoCall
	client := &http.Client{Transport: NewTransport()}
	for _, clients := range []int{1, 32} {
		b.Run("clients="+itoa(clients), func(b *testing.B) {
			var direct result
			via, viaStd, via1 := newProxied(gwPID), newProxied(gwStdPID), newProxied(gw1PID)
			nginx, stdp := newProxied(ngxPID), newProxied(stdPID)
			// Every process starts with a small heap; a round warms
			// them up (see warm).
			warm(b, client, body, clients, b.N/3+1, benchPath{down, ""}, benchPath{gw, "Bearer viewer-token"},
				benchPath{gwStd, "Bearer viewer-token"}, benchPath{gw1, "Bearer viewer-token"}, benchPath{ngx, ""}, benchPath{std, ""})
			for round := 0; round < 3; round++ {
				n := b.N/3 + 1
				direct.add(load(b, client, down+"/mcp", "", body, clients, n))
				via.load(b, client, gw+"/mcp", "Bearer viewer-token", body, clients, n)
				viaStd.load(b, client, gwStd+"/mcp", "Bearer viewer-token", body, clients, n)
				via1.load(b, client, gw1+"/mcp", "Bearer viewer-token", body, clients, n)
				nginx.load(b, client, ngx+"/mcp", "", body, clients, n)
				stdp.load(b, client, std+"/mcp", "", body, clients, n)
			}
			for name, p := range map[string]*proxied{"gw": &via, "gw1": &via1, "gwstd": &viaStd, "stdproxy": &stdp, "nginx": &nginx} {
				p.report(b, name, &direct)
			}
			b.ReportMetric(via1.opsPerSec()/nginx.opsPerSec(), "gw1/nginx")
			b.ReportMetric(via.opsPerSec()/nginx.opsPerSec(), "gw/nginx")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// proxied is the result of the loads through one proxy process, with what
// that process (and its children: nginx's workers) did meanwhile, read from
// /proc; ok is false where /proc cannot tell.
type proxied struct {
	result
	pid   int
	sched sched
	ok    bool
}

func newProxied(pid int) proxied { return proxied{pid: pid, ok: true} }

// sched is what the kernel counts for a set of threads.
type sched struct {
	switches int64 // voluntary and involuntary context switches
	cpu      int64 // ns on a CPU
	wait     int64 // ns runnable but waiting for a CPU
}

// load runs load through p's process and counts what that process did.
func (p *proxied) load(b *testing.B, c *http.Client, url, auth, body string, clients, n int) {
	b.Helper()
	before, ok1 := schedOf(p.pid)
	p.add(load(b, c, url, auth, body, clients, n))
	after, ok2 := schedOf(p.pid)
	p.ok = p.ok && ok1 && ok2
	p.sched.switches += after.switches - before.switches
	p.sched.cpu += after.cpu - before.cpu
	p.sched.wait += after.wait - before.wait
}

// report reports, under name, p's throughput against direct's, the
// latency it adds to direct's median, and its per-request counts.
func (p *proxied) report(b *testing.B, name string, direct *result) {
	b.ReportMetric(p.opsPerSec()/direct.opsPerSec(), name+"/direct")
	b.ReportMetric(p.p50()-direct.p50(), name+"_added_p50_µs")
	if !p.ok {
		return
	}
	n := float64(p.n)
	b.ReportMetric(float64(p.sched.switches)/n, name+"_switches/req")
	b.ReportMetric(float64(p.sched.cpu)/n/1e3, name+"_cpu_µs/req")
	b.ReportMetric(float64(p.sched.wait)/n/1e3, name+"_runq_µs/req")
}

// schedOf sums the context switches (/proc/PID/task/TID/status) and the
// CPU and run-queue time (/proc/PID/task/TID/schedstat) of the threads of
// process pid and of its child processes so far. It reports false where
// there is no /proc.
func schedOf(pid int) (sched, bool) {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*")
	if err != nil || len(tasks) == 0 {
		return sched{}, false
	}
	var s sched
	for _, task := range tasks {
		status, err := os.ReadFile(filepath.Join(task, "status"))
		if err != nil {
			continue // the thread has exited
		}
		for _, line := range strings.Split(string(status), "\n") {
			name, v, ok := strings.Cut(line, ":")
			if ok && (name == "voluntary_ctxt_switches" || name == "nonvoluntary_ctxt_switches") {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				s.switches += c
			}
		}
		if st, err := os.ReadFile(filepath.Join(task, "schedstat")); err == nil {
			if f := strings.Fields(string(st)); len(f) >= 2 {
				cpu, _ := strconv.ParseInt(f[0], 10, 64)
				wait, _ := strconv.ParseInt(f[1], 10, 64)
				s.cpu += cpu
				s.wait += wait
			}
		}
		children, _ := os.ReadFile(filepath.Join(task, "children"))
		for _, child := range strings.Fields(string(children)) {
			if cpid, err := strconv.Atoi(child); err == nil {
				if c, ok := schedOf(cpid); ok {
					s.switches += c.switches
					s.cpu += c.cpu
					s.wait += c.wait
				}
			}
		}
	}
	return s, true
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
// followed by args, in env (nil: this process's), and returns its URL and
// process id once something listens there.
func serveProcess(b *testing.B, env []string, bin string, args ...string) (string, int) {
	b.Helper()
	addr := freeAddr(b)
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, append([]string{"--host", host, "--port", port}, args...)...)
	cmd.Env = env
	startProcess(b, cmd)
	waitListening(b, addr)
	return "http://" + addr, cmd.Process.Pid
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
