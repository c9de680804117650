package gateway

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkInstructions counts, with valgrind's callgrind, the machine
// instructions a proxy process executes per forwarded request: the
// examples/gateway binary (gw, as deployed but for GOMAXPROCS=1, which
// makes the count repeatable) against a bare httputil.ReverseProxy binary
// that authorizes nothing (stdproxy, gateway/internal/stdproxy), in the
// same run, both in front of the go-sdk stateless JSON server of
// BenchmarkProcessesVersusNginx. Each proxy is warmed up with 200
// sequential requests, its counters are zeroed, and b.N more are counted.
//
// Unlike times, instruction counts do not depend on what else the machine
// does: two runs agree to a fraction of a percent, so they tell small
// changes of the gateway's own work apart where timings cannot. They do
// not count the kernel's work, cache misses or waiting. Skips without
// valgrind (Debian package valgrind). With MCPGUARD_CALLGRIND_DIR set, the
// counts are kept there (gw.out, stdproxy.out) for callgrind_annotate.
//
//	go test ./gateway -run '^$' -bench BenchmarkInstructions -benchtime 2000x
//	MCPGUARD_CALLGRIND_DIR=/tmp/cg go test ./gateway -run '^$' -bench BenchmarkInstructions -benchtime 1000x
//	callgrind_annotate --inclusive=yes /tmp/cg/gw.out | grep mcpguard
func BenchmarkInstructions(b *testing.B) {
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		b.Skip("valgrind not found (Debian package valgrind)")
	}
	ctl, err := exec.LookPath("callgrind_control")
	if err != nil {
		b.Skip("callgrind_control not found (Debian package valgrind)")
	}
	gwBin, stdBin := buildProxies(b)
	downAddr := freeAddr(b)
	child := exec.Command(os.Args[0], "-test.run=^TestDownstreamProcess$")
	child.Env = append(os.Environ(), downstreamEnv+"="+downAddr)
	startProcess(b, child)
	waitListening(b, downAddr)
	down := "http://" + downAddr

	// GODEBUG as the binary sets it for itself (examples/gateway's
	// sysmon_unix.go): given here, it does not re-execute itself, which
	// callgrind would not follow.
	gwEnv := append(withoutEnv(withoutEnv(os.Environ(), TokensEnv), "GODEBUG"), "GODEBUG=schedtrace=2147483647")
	body := echoCall
	gw := countInstructions(b, vg, ctl, "gw", gwEnv, "Bearer viewer-token", body, gwBin, "--upstream", down+"/mcp")
	std := countInstructions(b, vg, ctl, "stdproxy", os.Environ(), "", body, stdBin, "--upstream", down)
	b.ReportMetric(gw, "gw_instr/req")
	b.ReportMetric(std, "stdproxy_instr/req")
	b.ReportMetric(gw/std, "gw/stdproxy")
	b.ReportMetric(0, "ns/op")
}

// buildProxies builds the examples/gateway and stdproxy binaries into a
// temporary directory.
func buildProxies(b *testing.B) (gw, std string) {
	b.Helper()
	dir := b.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	gw, std = filepath.Join(dir, "gateway"), filepath.Join(dir, "stdproxy")
	for bin, pkg := range map[string]string{gw: "./examples/gateway", std: "./gateway/internal/stdproxy"} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return gw, std
}

// countInstructions runs bin with args under callgrind (GOMAXPROCS=1, a
// free loopback port), sends it 200 requests, zeroes its counters, sends
// b.N more, dumps the counters and returns the instructions per request.
// With MCPGUARD_CALLGRIND_DIR set, it keeps the dump there as name.out.
func countInstructions(b *testing.B, vg, ctl, name string, env []string, auth, body, bin string, args ...string) float64 {
	b.Helper()
	addr := freeAddr(b)
	host, port, _ := net.SplitHostPort(addr)
	out := filepath.Join(b.TempDir(), "callgrind.out")
	cmd := exec.Command(vg, append([]string{"--tool=callgrind", "--callgrind-out-file=" + out, bin,
		"--host", host, "--port", port}, args...)...)
	cmd.Env = append(withoutEnv(env, "GOMAXPROCS"), "GOMAXPROCS=1")
	// The end of what valgrind and the proxy print, for a failure's report.
	var mu sync.Mutex
	var stderr tailWriter
	cmd.Stderr = lockedWriter{&mu, &stderr}
	failed := func(format string, args ...any) {
		b.Helper()
		// Wait returns once all of stderr is copied.
		cmd.Process.Kill()
		cmd.Wait()
		mu.Lock()
		tail, unknown := string(stderr.b), stderr.unknown
		mu.Unlock()
		if unknown {
			// Go's runtime uses RDTSCP where the CPU has it, which
			// valgrind 3.19 (Debian 12) does not decode: the proxy
			// dies of SIGILL when it first spins on a lock, or
			// callgrind fails an assertion handling that signal.
			b.Skipf("%s under callgrind: valgrind met an instruction it does not recognise "+
				"(on this CPU, Go's runtime.cputicks uses RDTSCP); counting needs a newer valgrind", name)
		}
		b.Fatalf("%s under callgrind: "+format+"\nthe end of its stderr:\n%s", append(append([]any{name}, args...), tail)...)
	}
	startProcess(b, cmd)
	deadline := time.Now().Add(60 * time.Second) // valgrind starts slowly
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			failed("nothing listens on %s", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	url := "http://" + addr + "/mcp"
	client := &http.Client{Transport: &http.Transport{}}
	send := func(n int) {
		for range n {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := client.Do(req)
			if err != nil {
				failed("%v", err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), "hello") {
				failed("status %s: %s", resp.Status, got)
			}
		}
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	callgrind := func(arg string) {
		if o, err := exec.Command(ctl, arg, pid).CombinedOutput(); err != nil {
			failed("callgrind_control %s: %v\n%s", arg, err, o)
		}
	}
	send(200)
	callgrind("--zero")
	b.ResetTimer()
	send(b.N)
	callgrind("--dump")
	b.StopTimer()
	data, err := os.ReadFile(out + ".1")
	if err != nil {
		b.Fatal(err)
	}
	if dir := os.Getenv("MCPGUARD_CALLGRIND_DIR"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".out"), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "summary: "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatalf("callgrind summary %q: %v", v, err)
			}
			return n / float64(b.N)
		}
	}
	b.Fatalf("no summary line in %s.1", out)
	return 0
}

// tailWriter keeps the last 8 KiB written to it.
// tailWriter keeps the end of what is written to it, and whether valgrind
// said it met an instruction it does not know.
type tailWriter struct {
	b       []byte
	unknown bool
}

func (w *tailWriter) Write(p []byte) (int, error) {
	const keep = 8 << 10
	if bytes.Contains(p, []byte("Unrecognised instruction")) || bytes.Contains(p, []byte("vgCallgrind_post_signal")) {
		w.unknown = true
	}
	w.b = append(w.b, p...)
	if len(w.b) > keep {
		w.b = append(w.b[:0], w.b[len(w.b)-keep:]...)
	}
	return len(p), nil
}
