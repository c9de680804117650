package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime/pprof"
	"testing"
)

// leanProxy is floorProxy with the decision work that any gateway doing
// the seed's job does for an allowed tools/call, done by the gateway's own
// code: a correlation id, authentication, the body's read, the envelope
// scan, the policy's decision and the two decision-log lines ("allow" and
// "upstream") to g's logger. It leaves out the gateway's relay: the call's
// timer and timeout, the write guard, session binding, the header rewrite,
// the call's state and outcome, the checks of the answer. It relays as
// floorProxy does (one message, no batch; a refusal is a bare status).
// Below leanFull it does only the first pieces of that work: leanAuth the
// correlation id and authentication (the body read as the floor reads
// it), leanParse the body's read into the gateway's pooled buffer and its
// scan too, leanDecide the decision too; leanFull adds the log lines. See
// BenchmarkGatewayLean and BenchmarkGatewayLeanLevels.
type leanProxy struct {
	fl    *floorProxy
	g     *Gateway
	level int
}

// The levels of a leanProxy.
const (
	leanAuth = iota + 1
	leanParse
	leanDecide
	leanFull
)

func (p *leanProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := p.g
	cid := g.ids.Next()
	start := g.now()
	pr, aerr := g.authenticate(r)
	if aerr != nil {
		http.Error(w, aerr.message, aerr.status)
		return
	}
	bp := p.fl.bufs.Get().(*[]byte)
	defer p.fl.bufs.Put(bp)
	var body []byte
	if p.level < leanParse {
		var ok bool
		if body, ok = readInto(w, r, *bp); !ok {
			return
		}
	} else {
		buf, berr := g.readBody(r)
		if berr != nil {
			http.Error(w, berr.message, berr.status)
			return
		}
		defer g.putBuf(buf)
		body = buf.Bytes()
		msgs, batch, perr := parseBody(body)
		if perr != nil || batch {
			http.Error(w, "one message", http.StatusBadRequest)
			return
		}
		if p.level >= leanDecide {
			pl := g.planMessage(r, g.pol.Load(), pr, cid, &msgs[0], false, start)
			if pl.local != nil {
				http.Error(w, pl.local.message, pl.local.status)
				return
			}
			if p.level >= leanFull {
				g.logDecision(cid, pr, &pl, nil)
			}
		}
	}
	status, n := p.fl.relay(w, r, body, *bp)
	if status != 0 && p.level >= leanFull {
		g.logRelayed(r.Context(), cid, status, n, false, false, start, nil)
	}
}

// BenchmarkGatewayLean is BenchmarkGatewayFloor's 32-client load on four
// paths in rotating rounds after a warm one: direct, the gateway, the
// floor (floorProxy) and lean (leanProxy: the floor plus the gateway's
// decision work and log lines, without its relay). lean / direct is what
// a gateway could keep of direct if its relay cost no more than the
// floor's; gw / lean is what the gateway's relay costs against a bare
// one.
//
//	go test ./gateway -run '^$' -bench '^BenchmarkGatewayLean$' -benchtime 12000x -count 6
func BenchmarkGatewayLean(b *testing.B) {
	down := labelled("down", func() string { return newBenchServer(b, echoHandler()) })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := New(down+"/mcp", DemoTokens(), &Options{Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	gw := labelled("gw", func() string { return newBenchServer(b, g) })
	floor := labelled("floor", func() string { return newBenchServer(b, newFloorProxy(b, down+"/mcp")) })
	gl, err := New(down+"/mcp", DemoTokens(), &Options{Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	lean := labelled("lean", func() string {
		return newBenchServer(b, &leanProxy{fl: newFloorProxy(b, down+"/mcp"), g: gl, level: leanFull})
	})
	b.Run("clients=32", func(b *testing.B) {
		auth := "Bearer viewer-token"
		res := rotate(b, []benchPath{{down, ""}, {gw, auth}, {floor, auth}, {lean, auth}})
		direct, via, fl, ln := &res[0], &res[1], &res[2], &res[3]
		b.ReportMetric(via.opsPerSec()/direct.opsPerSec(), "gw/direct")
		b.ReportMetric(fl.opsPerSec()/direct.opsPerSec(), "floor/direct")
		b.ReportMetric(ln.opsPerSec()/direct.opsPerSec(), "lean/direct")
		b.ReportMetric(via.opsPerSec()/ln.opsPerSec(), "gw/lean")
		b.ReportMetric(ln.opsPerSec()/fl.opsPerSec(), "lean/floor")
		b.ReportMetric(direct.cpuPerOp(), "direct_cpu_µs/op")
		b.ReportMetric(ln.cpuPerOp()-fl.cpuPerOp(), "lean_over_floor_cpu_µs/op")
		b.ReportMetric(via.cpuPerOp()-ln.cpuPerOp(), "gw_over_lean_cpu_µs/op")
		b.ReportMetric(0, "ns/op")
	})
}

// BenchmarkGatewayLeanLevels splits leanProxy's cost over the floor by
// piece: direct, the floor and leanProxy at each level, in rotating rounds
// after a warm one, each level behind a Gateway of its own.
//
//	go test ./gateway -run '^$' -bench BenchmarkGatewayLeanLevels -benchtime 12000x -count 4
func BenchmarkGatewayLeanLevels(b *testing.B) {
	down := labelled("down", func() string { return newBenchServer(b, echoHandler()) })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	floor := labelled("floor", func() string { return newBenchServer(b, newFloorProxy(b, down+"/mcp")) })
	auth := "Bearer viewer-token"
	paths := []benchPath{{down, ""}, {floor, auth}}
	names := []string{"auth", "parse", "decide", "full"}
	for level := leanAuth; level <= leanFull; level++ {
		g, err := New(down+"/mcp", DemoTokens(), &Options{Logger: logger})
		if err != nil {
			b.Fatal(err)
		}
		u := labelled(names[level-1], func() string {
			return newBenchServer(b, &leanProxy{fl: newFloorProxy(b, down+"/mcp"), g: g, level: level})
		})
		paths = append(paths, benchPath{u, auth})
	}
	b.Run("clients=32", func(b *testing.B) {
		res := rotate(b, paths)
		direct, fl := &res[0], &res[1]
		b.ReportMetric(fl.opsPerSec()/direct.opsPerSec(), "floor/direct")
		prev := fl
		for i, name := range names {
			r := &res[2+i]
			b.ReportMetric(r.opsPerSec()/direct.opsPerSec(), name+"/direct")
			b.ReportMetric(r.cpuPerOp()-prev.cpuPerOp(), name+"_added_cpu_µs/op")
			prev = r
		}
		b.ReportMetric(0, "ns/op")
	})
}

// rotate loads each of paths with BenchmarkGatewayFloor's 32-client load of
// echoCall, b.N calls in all, in eight rounds whose order rotates, after a
// warm round of every path, from goroutines labelled party=client, and
// returns each path's result.
func rotate(b *testing.B, paths []benchPath) []result {
	defer pprof.SetGoroutineLabels(context.Background())
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("party", "client")))
	client := &http.Client{Transport: NewTransport()}
	const clients, rounds = 32, 8
	n := b.N/rounds + 1
	warm(b, client, echoCall, clients, n, paths...)
	res := make([]result, len(paths))
	for round := range rounds {
		for i := range paths {
			j := (round + i) % len(paths)
			res[j].add(load(b, client, paths[j].url+"/mcp", paths[j].auth, echoCall, clients, n))
		}
	}
	return res
}
