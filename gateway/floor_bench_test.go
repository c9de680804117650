package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/pprof"
	"sync"
	"testing"
)

// floorProxy is the least a proxy on net/http's server and the gateway's
// own upstream client does: it reads the request's body, sends it with the
// request's header (less Authorization) to one URL, and copies the answer
// back. It authenticates, parses, decides, times and logs nothing, and
// shares nothing with the gateway's handler but the client; see
// BenchmarkGatewayFloor.
type floorProxy struct {
	rt   http.RoundTripper
	u    *url.URL
	bufs sync.Pool // *[]byte of 32 KiB
}

func newFloorProxy(b *testing.B, target string) *floorProxy {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	p := &floorProxy{rt: newUpstreamClient(), u: u}
	p.bufs.New = func() any { buf := make([]byte, 32<<10); return &buf }
	return p
}

func (p *floorProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bp := p.bufs.Get().(*[]byte)
	defer p.bufs.Put(bp)
	if body, ok := readInto(w, r, *bp); ok {
		p.relay(w, r, body, *bp)
	}
}

// readInto reads r's body, of its declared length, into buf and returns
// it; it answers 400 and returns false when it cannot.
func readInto(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, bool) {
	if r.ContentLength < 0 || r.ContentLength > int64(len(buf)) {
		http.Error(w, "body length", http.StatusBadRequest)
		return nil, false
	}
	n, err := io.ReadFull(r.Body, buf[:r.ContentLength])
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return buf[:n], true
}

// relay sends body with r's header (less Authorization) to p's URL and
// copies the answer to w through buf, and returns its status and the
// bytes copied (status 0: none came).
func (p *floorProxy) relay(w http.ResponseWriter, r *http.Request, body, buf []byte) (status int, n int64) {
	r.Header.Del("Authorization")
	out := &http.Request{Method: http.MethodPost, URL: p.u, Host: p.u.Host, Header: r.Header,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	resp, err := p.rt.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return 0, 0
	}
	defer resp.Body.Close()
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	for {
		m, err := resp.Body.Read(buf)
		if m > 0 {
			if _, werr := w.Write(buf[:m]); werr != nil {
				return resp.StatusCode, n
			}
			n += int64(m)
		}
		if err != nil {
			return resp.StatusCode, n
		}
	}
}

// BenchmarkGatewayFloor is BenchmarkGateway at 32 clients with two more
// paths. floor is floorProxy, a proxy that does nothing but forward, on the
// same server (net/http's) and the same upstream client as the gateway:
// what it costs over direct is what any proxy built so costs in this
// setting (a second loopback hop, net/http's server, the client); what the
// gateway costs over the floor is its own work (authentication, envelope
// scan, policy, header rewrite, the call's timer, the write guard, two
// decision-log lines) as this process runs it, beside a downstream that
// keeps the garbage collector busy: more than BenchmarkServeHTTP measures
// alone. gwquiet is the gateway with a logger that drops every line
// unformatted (slog.DiscardHandler): gw less gwquiet is what its two
// decision-log lines per call cost here. The paths run in rounds whose
// order rotates.
//
//	go test ./gateway -run '^$' -bench BenchmarkGatewayFloor -benchtime 12000x -count 6
func BenchmarkGatewayFloor(b *testing.B) {
	down := labelled("down", func() string { return newBenchServer(b, echoHandler()) })
	g, err := New(down+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	gw := labelled("gw", func() string { return newBenchServer(b, g) })
	// The same gateway with its log lines dropped before they are
	// formatted (slog.DiscardHandler): what the two decision-log lines
	// of every forwarded call cost in this setting.
	gq, err := New(down+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	quiet := labelled("gwquiet", func() string { return newBenchServer(b, gq) })
	floor := labelled("floor", func() string { return newBenchServer(b, newFloorProxy(b, down+"/mcp")) })
	body := echoCall
	client := &http.Client{Transport: NewTransport()}
	const clients = 32
	b.Run("clients=32", func(b *testing.B) {
		defer pprof.SetGoroutineLabels(context.Background())
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("party", "client")))
		var direct, via, fl, vq result
		const rounds = 8
		n := b.N/rounds + 1
		warm(b, client, body, clients, n, benchPath{down, ""}, benchPath{gw, "Bearer viewer-token"},
			benchPath{floor, "Bearer viewer-token"}, benchPath{quiet, "Bearer viewer-token"})
		paths := []func(){
			func() { direct.add(load(b, client, down+"/mcp", "", body, clients, n)) },
			func() { via.add(load(b, client, gw+"/mcp", "Bearer viewer-token", body, clients, n)) },
			func() { fl.add(load(b, client, floor+"/mcp", "Bearer viewer-token", body, clients, n)) },
			func() { vq.add(load(b, client, quiet+"/mcp", "Bearer viewer-token", body, clients, n)) },
		}
		for round := range rounds {
			for i := range paths {
				paths[(round+i)%len(paths)]()
			}
		}
		b.ReportMetric(via.opsPerSec()/direct.opsPerSec(), "gw/direct")
		b.ReportMetric(fl.opsPerSec()/direct.opsPerSec(), "floor/direct")
		b.ReportMetric(via.opsPerSec()/fl.opsPerSec(), "gw/floor")
		b.ReportMetric(direct.cpuPerOp(), "direct_cpu_µs/op")
		b.ReportMetric(fl.cpuPerOp()-direct.cpuPerOp(), "floor_added_cpu_µs/op")
		b.ReportMetric(via.cpuPerOp()-fl.cpuPerOp(), "gw_over_floor_cpu_µs/op")
		// The collections per thousand calls, each path's: in this process
		// they are the downstream's, paced by the heap all paths hold.
		b.ReportMetric(direct.gcPerKop(), "direct_gc/kop")
		b.ReportMetric(fl.gcPerKop(), "floor_gc/kop")
		b.ReportMetric(via.gcPerKop(), "gw_gc/kop")
		b.ReportMetric(vq.gcPerKop(), "gwquiet_gc/kop")
		b.ReportMetric(vq.opsPerSec()/direct.opsPerSec(), "gwquiet/direct")
		b.ReportMetric(via.cpuPerOp()-vq.cpuPerOp(), "gw_log_cpu_µs/op")
		// The same split by mode: system (the kernel's share: system
		// calls, the loopback's TCP, waking threads) and user.
		b.ReportMetric(fl.sysPerOp()-direct.sysPerOp(), "floor_added_sys_µs/op")
		b.ReportMetric(via.sysPerOp()-fl.sysPerOp(), "gw_over_floor_sys_µs/op")
		b.ReportMetric(fl.cswPerOp()-direct.cswPerOp(), "floor_added_switches/op")
		b.ReportMetric(via.cswPerOp()-fl.cswPerOp(), "gw_over_floor_switches/op")
		b.ReportMetric(0, "ns/op")
	})
}

// BenchmarkGatewayFloorSplit runs the gateway and the floor (floorProxy)
// in front of a downstream each, two go-sdk stateless JSON servers alike,
// at 32 clients in alternating rounds after a warm one: a CPU profile then
// tells apart what each downstream spends on the calls it is sent, which
// BenchmarkGatewayFloor, one downstream for every path, cannot. The
// downstreams' goroutines carry the pprof label party=downgw and
// party=downfloor, the proxies' gw and floor:
//
//	go test ./gateway -run '^$' -bench BenchmarkGatewayFloorSplit -benchtime 30000x -cpuprofile split.out
//	go tool pprof -tags split.out
func BenchmarkGatewayFloorSplit(b *testing.B) {
	downGW := labelled("downgw", func() string { return newBenchServer(b, echoHandler()) })
	downFloor := labelled("downfloor", func() string { return newBenchServer(b, echoHandler()) })
	g, err := New(downGW+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	gw := labelled("gw", func() string { return newBenchServer(b, g) })
	floor := labelled("floor", func() string { return newBenchServer(b, newFloorProxy(b, downFloor+"/mcp")) })
	body := echoCall
	client := &http.Client{Transport: NewTransport()}
	const clients = 32
	b.Run("clients=32", func(b *testing.B) {
		defer pprof.SetGoroutineLabels(context.Background())
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("party", "client")))
		paths := []benchPath{{gw, "Bearer viewer-token"}, {floor, "Bearer viewer-token"}}
		const rounds = 8
		n := b.N/rounds + 1
		warm(b, client, body, clients, n, paths...)
		var res [2]result // gw's, the floor's
		for round := range rounds {
			for i := range paths {
				j := (round + i) % len(paths) // each path first every other round
				res[j].add(load(b, client, paths[j].url+"/mcp", paths[j].auth, body, clients, n))
			}
		}
		b.ReportMetric(res[0].opsPerSec()/res[1].opsPerSec(), "gw/floor")
		b.ReportMetric(res[0].cpuPerOp()-res[1].cpuPerOp(), "gw_over_floor_cpu_µs/op")
		b.ReportMetric(0, "ns/op")
	})
}
