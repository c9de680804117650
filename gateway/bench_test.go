package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGateway measures a go-sdk stateless JSON server on loopback,
// directly and through the gateway (also on loopback), in the same run, at 1
// and 32 concurrent clients. It reports both throughputs, their ratio
// (gw/direct), both median latencies and the latency the gateway adds, and
// for each path the process's CPU time per request (cpu_µs/op: every party
// is in this process, so gw less direct is what the gateway costs) and the
// share of GOMAXPROCS the process kept busy (busy; under 1 at 32 clients,
// the path waits on something else than the CPU).
//
// The goroutines of the downstream's server, the gateway's server and the
// load generator carry the pprof label "party" (down, gw, client), so that
// a CPU profile tells their shares apart:
//
//	go test ./gateway -run '^$' -bench 'BenchmarkGateway$/clients=32' -benchtime 10000x -cpuprofile cpu.out
//	go tool pprof -tags cpu.out
//
//	go test ./gateway -run '^$' -bench BenchmarkGateway -benchtime 10000x -count 4
func BenchmarkGateway(b *testing.B) {
	down := labelled("down", func() string { return newBenchServer(b, echoHandler()) })
	g, err := New(down+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	gw := labelled("gw", func() string { return newBenchServer(b, g) })
	body := echoCall
	client := &http.Client{Transport: NewTransport()}
	for _, clients := range []int{1, 32} {
		b.Run("clients="+itoa(clients), func(b *testing.B) {
			defer pprof.SetGoroutineLabels(context.Background())
			pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("party", "client")))
			var direct, via result
			// Alternate short rounds, each path first every other round,
			// so that the drift of a shared machine hits both alike,
			// after a round that warms the process up.
			const rounds = 10
			warm(b, client, body, clients, b.N/rounds+1, benchPath{down, ""}, benchPath{gw, "Bearer viewer-token"})
			for round := range rounds {
				d := func() { direct.add(load(b, client, down+"/mcp", "", body, clients, b.N/rounds+1)) }
				v := func() { via.add(load(b, client, gw+"/mcp", "Bearer viewer-token", body, clients, b.N/rounds+1)) }
				if round%2 == 0 {
					d()
					v()
				} else {
					v()
					d()
				}
			}
			b.ReportMetric(direct.opsPerSec(), "direct_ops/s")
			b.ReportMetric(via.opsPerSec(), "gw_ops/s")
			b.ReportMetric(via.opsPerSec()/direct.opsPerSec(), "ratio")
			b.ReportMetric(direct.p50(), "direct_p50_µs")
			b.ReportMetric(via.p50(), "gw_p50_µs")
			b.ReportMetric(via.p50()-direct.p50(), "added_p50_µs")
			b.ReportMetric(direct.cpuPerOp(), "direct_cpu_µs/op")
			b.ReportMetric(via.cpuPerOp(), "gw_cpu_µs/op")
			b.ReportMetric(direct.busy(), "direct_busy")
			b.ReportMetric(via.busy(), "gw_busy")
			b.ReportMetric(direct.gcPerKop(), "direct_gc/kop")
			b.ReportMetric(via.gcPerKop(), "gw_gc/kop")
			b.ReportMetric(direct.kbPerOp(), "direct_kB/op")
			b.ReportMetric(via.kbPerOp(), "gw_kB/op")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// echoCall is the benchmarks' request: a tools/call of echoHandler's echo
// tool, which answers with "hello" (load checks that it does).
const echoCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"hello"}}}`

// echoHandler is the benchmarks' downstream: a go-sdk stateless JSON server
// with one tool, echo, that returns its msg argument.
func echoHandler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a struct {
		Msg string `json:"msg"`
	}) (*mcp.CallToolResult, map[string]string, error) {
		return nil, map[string]string{"msg": a.Msg}, nil
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

type result struct {
	n    int
	d    time.Duration
	cpu  time.Duration // this process's CPU time (user and system)
	sys  time.Duration // the part of cpu in system mode
	csw  int64         // the process's context switches
	lats []time.Duration
	// gcs and alloc are the garbage collections and the bytes allocated
	// in the process (every party: the downstream's most of them).
	gcs   uint32
	alloc uint64
}

func (r *result) add(o result) {
	r.n += o.n
	r.d += o.d
	r.cpu += o.cpu
	r.sys += o.sys
	r.csw += o.csw
	r.lats = append(r.lats, o.lats...)
	r.gcs += o.gcs
	r.alloc += o.alloc
}

// gcPerKop is the process's garbage collections per thousand requests.
func (r *result) gcPerKop() float64 { return float64(r.gcs) * 1000 / float64(r.n) }

// kbPerOp is the kilobytes the process allocated per request.
func (r *result) kbPerOp() float64 { return float64(r.alloc) / 1024 / float64(r.n) }

// sysPerOp is the process's CPU time in system mode per request, in
// microseconds.
func (r *result) sysPerOp() float64 { return float64(r.sys.Microseconds()) / float64(r.n) }

// cswPerOp is the process's context switches per request.
func (r *result) cswPerOp() float64 { return float64(r.csw) / float64(r.n) }

// cpuPerOp is the process's CPU time per request, in microseconds.
func (r *result) cpuPerOp() float64 { return float64(r.cpu.Microseconds()) / float64(r.n) }

// busy is the share of the machine's CPUs (GOMAXPROCS) the process used.
func (r *result) busy() float64 {
	return r.cpu.Seconds() / (r.d.Seconds() * float64(runtime.GOMAXPROCS(0)))
}

func (r *result) opsPerSec() float64 { return float64(r.n) / r.d.Seconds() }

func (r *result) p50() float64 {
	slices.Sort(r.lats)
	return float64(r.lats[len(r.lats)/2].Nanoseconds()) / 1e3
}

// load sends n requests from clients goroutines and times each.
func load(b *testing.B, c *http.Client, url, auth, body string, clients, n int) result {
	b.Helper()
	var next atomic.Int64
	lats := make([]time.Duration, n)
	var wg sync.WaitGroup
	var failed atomic.Value
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	u0, s0, csw0 := processUsage()
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				t0 := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					failed.Store(err.Error())
					return
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				lats[i] = time.Since(t0)
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `hello`) {
					failed.Store("status " + resp.Status + ": " + string(out))
					return
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		b.Fatalf("%s: %v", url, f)
	}
	d := time.Since(start)
	u1, s1, csw1 := processUsage()
	runtime.ReadMemStats(&ms1)
	return result{n: n, d: d, cpu: u1 + s1 - u0 - s0, sys: s1 - s0, csw: csw1 - csw0, lats: lats, gcs: ms1.NumGC - ms0.NumGC, alloc: ms1.TotalAlloc - ms0.TotalAlloc}
}

// A benchPath is a path a benchmark loads: its URL and Authorization ("" for
// none).
type benchPath struct{ url, auth string }

// warm sends n requests from clients goroutines on each of paths, in turn,
// and discards what they measure: a benchmark's process starts with a
// small heap that the first thousands of calls grow, and until it has, the
// garbage collector runs several times as often. Unwarmed, the paths of
// the first measured round paid for that growth, the one that ran first
// most of all: the direct path in every benchmark here, which raised every
// ratio against it, and the gateway, second, against the paths after it
// (BENCHMARKS.md, fifty-second session).
func warm(b *testing.B, c *http.Client, body string, clients, n int, paths ...benchPath) {
	b.Helper()
	for _, p := range paths {
		load(b, c, p.url+"/mcp", p.auth, body, clients, n)
	}
}

// labelled runs start with the pprof label party=name, which the goroutines
// it starts (a server's, and those of its connections) inherit.
func labelled(name string, start func() string) (url string) {
	pprof.Do(context.Background(), pprof.Labels("party", name), func(context.Context) { url = start() })
	return url
}

func newBenchServer(b *testing.B, h http.Handler) string {
	b.Helper()
	s := &http.Server{Handler: h}
	ln, err := netListen()
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(ln)
	b.Cleanup(func() { s.Close() })
	return "http://" + ln.Addr().String()
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// staticTransport answers every request at once, so that BenchmarkServeHTTP
// measures the gateway's own work per request.
type staticTransport struct{}

func (staticTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`))}, nil
}

// BenchmarkServeHTTP is the gateway's own cost of one allowed tools/call
// (authentication, envelope scan, policy, header rewrite, relay, two log
// lines to a discarding text handler), without network.
func BenchmarkServeHTTP(b *testing.B) {
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: staticTransport{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	body := echoCall
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if status := benchServe(g, body); status != http.StatusOK {
				b.Fatalf("status %d", status)
			}
		}
	})
}

// benchServe serves one viewer's POST of body to g, as a client with the
// usual headers sends it, and returns the status answered.
func benchServe(g *Gateway, body string) int {
	req, _ := http.NewRequest(http.MethodPost, "http://gw/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer viewer-token")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	w := &discardWriter{h: http.Header{}}
	g.ServeHTTP(w, req)
	return w.status
}

// BenchmarkServeHTTPLog is BenchmarkServeHTTP on one goroutine, with its
// log lines formatted by a text handler into io.Discard and dropped
// unformatted (slog.DiscardHandler): the difference is what the two
// decision-log lines of an allowed call cost the gateway alone.
func BenchmarkServeHTTPLog(b *testing.B) {
	body := echoCall
	for _, tc := range []struct {
		name string
		h    slog.Handler
	}{{"text", slog.NewTextHandler(io.Discard, nil)}, {"discard", slog.DiscardHandler}} {
		b.Run(tc.name, func(b *testing.B) {
			g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Transport: staticTransport{}, Logger: slog.New(tc.h)})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if status := benchServe(g, body); status != http.StatusOK {
					b.Fatalf("status %d", status)
				}
			}
		})
	}
}

type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}
func (w *discardWriter) WriteHeader(s int) { w.status = s }

// listTransport answers every request with a tools/list result of 20
// tools, each with a description and an input schema.
type listTransport struct{ body string }

func newListTransport() listTransport {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[`)
	for i := range 20 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":"tool_` + itoa(i) + `","description":"Looks a record up by its id and returns its fields.","inputSchema":{"type":"object","properties":{"id":{"type":"string","pattern":"^[A-Z]{4}-[0-9]{5}$"}},"required":["id"],"additionalProperties":false}}`)
	}
	b.WriteString(`]}}`)
	return listTransport{b.String()}
}

func (t listTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(t.body))}, nil
}

// BenchmarkServeHTTPPins is the gateway's own cost with Options.Pins
// against the same request without (the bare path), in one run: a
// tools/call, whose answer pins make the gateway read whole and check for
// a listing, and a tools/list of 20 tools, each of whose definitions is
// hashed and looked up (against FilterToolsList, which reads and rewrites
// the listing too).
func BenchmarkServeHTTPPins(b *testing.B) {
	callBody := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"hello"}}}`
	listBody := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
		body string
		opts Options
	}{
		{"call/bare", staticTransport{}, callBody, Options{}},
		{"call/pins", staticTransport{}, callBody, Options{Pins: TrustOnFirstUse()}},
		{"list/filter", newListTransport(), listBody, Options{FilterToolsList: true}},
		{"list/pins", newListTransport(), listBody, Options{Pins: TrustOnFirstUse()}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			o := tc.opts
			o.Transport, o.Logger = tc.rt, slog.New(slog.NewTextHandler(io.Discard, nil))
			g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &o)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, "http://gw/mcp", strings.NewReader(tc.body))
				req.Header.Set("Authorization", "Bearer admin-token")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				w := &discardWriter{h: http.Header{}}
				g.ServeHTTP(w, req)
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
		})
	}
}

// BenchmarkForwardAllocs counts the allocations of one tools/call over
// loopback, one client at a time: direct to a recording downstream (the
// bare path) and through the gateway in front of it. Every party is in
// this process, so gateway less direct is what the gateway allocates
// (its server's reading of the request, its own work, its client's
// reading of the answer):
//
//	go test ./gateway -run '^$' -bench BenchmarkForwardAllocs -benchmem
func BenchmarkForwardAllocs(b *testing.B) {
	down := newBenchServer(b, &downstream{})
	g, err := New(down+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	gw := newBenchServer(b, g)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"id":"c-1"}}}`
	for _, tc := range []struct{ name, url string }{{"direct", down}, {"gateway", gw}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, tc.url+"/mcp", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer viewer-token")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
