package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
)

// BenchmarkWarmUp tests the method of the benchmarks here: three identical
// gateways (the same options, text log lines) in front of one downstream,
// loaded at 32 clients in the rotating rounds of BenchmarkGatewayFloor
// (direct, gw1, gw2, gw3, the order rotating by one a round), with warm's
// round first (warm=true) and without it (warm=false). Identical paths
// should measure alike, whatever their place in the rounds; it reports each
// gateway's throughput against direct's, gw3's against gw1's, and the
// collections per 1000 direct calls in the first measured round and in the
// rounds after it (the heap's growth). The process's first load is the
// cold one, so run each case in a process of its own:
//
//	go test ./gateway -run '^$' -bench 'BenchmarkWarmUp/warm=false' -benchtime 12000x -count 1
//	go test ./gateway -run '^$' -bench 'BenchmarkWarmUp/warm=true' -benchtime 12000x -count 1
func BenchmarkWarmUp(b *testing.B) {
	down := newBenchServer(b, echoHandler())
	paths := []benchPath{{down, ""}}
	for range 3 {
		g, err := New(down+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		paths = append(paths, benchPath{newBenchServer(b, g), "Bearer viewer-token"})
	}
	body := echoCall
	client := &http.Client{Transport: NewTransport()}
	const clients = 32
	for _, warmed := range []bool{false, true} {
		name := "warm=false"
		if warmed {
			name = "warm=true"
		}
		b.Run(name, func(b *testing.B) {
			const rounds = 8
			n := b.N/rounds + 1
			if warmed {
				warm(b, client, body, clients, n, paths...)
			}
			res := make([]result, len(paths))
			var first, later result // direct's
			for round := range rounds {
				for i := range paths {
					j := (round + i) % len(paths)
					r := load(b, client, paths[j].url+"/mcp", paths[j].auth, body, clients, n)
					res[j].add(r)
					if j == 0 && round == 0 {
						first.add(r)
					} else if j == 0 {
						later.add(r)
					}
				}
			}
			for j, m := range []string{"gw1/direct", "gw2/direct", "gw3/direct"} {
				b.ReportMetric(res[j+1].opsPerSec()/res[0].opsPerSec(), m)
			}
			b.ReportMetric(res[3].opsPerSec()/res[1].opsPerSec(), "gw3/gw1")
			b.ReportMetric(first.gcPerKop(), "direct_round1_gc/kop")
			b.ReportMetric(later.gcPerKop(), "direct_later_gc/kop")
			b.ReportMetric(0, "ns/op")
		})
	}
}
