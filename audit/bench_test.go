package audit_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

func benchEvent() *audit.Event {
	e := event("c-0123456789abcdef", 1)
	e.Roles = []string{"engineering"}
	e.ProtocolVersion, e.ClientName = "2026-07-28", "bench"
	return e
}

// BenchmarkJSONL compares the buffered sink with the bare encoder writing to
// io.Discard (the baseline): events/s and the ratio to the baseline.
func BenchmarkJSONL(b *testing.B) {
	ctx := context.Background()
	e := benchEvent()
	var baseNS float64
	b.Run("baseline_encode_discard", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf, _ = e.AppendJSON(buf[:0])
			buf = append(buf, '\n')
			io.Discard.Write(buf)
		}
		baseNS = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(1e9/baseNS, "events/s")
	})
	b.Run("buffered", func(b *testing.B) {
		s, err := audit.OpenJSONL(filepath.Join(b.TempDir(), "a.jsonl"), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Write(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(1e9/ns, "events/s")
		if baseNS > 0 {
			b.ReportMetric(ns/baseNS, "x_baseline_time")
		}
	})
	b.Run("buffered_parallel", func(b *testing.B) {
		s, err := audit.OpenJSONL(filepath.Join(b.TempDir(), "a.jsonl"), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := s.Write(ctx, e); err != nil {
					b.Error(err)
					return
				}
			}
		})
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkJSONLDurable runs the fsync mode with 1 and 16 concurrent writers
// and reports fsyncs per event (group commit shares one fsync).
func BenchmarkJSONLDurable(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s, err := audit.OpenJSONL(filepath.Join(b.TempDir(), "a.jsonl"), &audit.JSONLOptions{Durable: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			e := benchEvent()
			b.ResetTimer()
			var wg sync.WaitGroup
			per := (b.N + writers - 1) / writers
			for range writers {
				wg.Go(func() {
					for range per {
						if err := s.Write(ctx, e); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			st := s.Stats()
			b.ReportMetric(float64(st.Syncs)/float64(st.Events), "fsyncs/event")
			b.ReportMetric(float64(st.Events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkSQLite: batched rows/s through Write+Flush, against one durable
// single-row insert per event (the unbatched baseline).
func BenchmarkSQLite(b *testing.B) {
	ctx := context.Background()
	e := benchEvent()
	var baseNS float64
	b.Run("baseline_single_row_commit", func(b *testing.B) {
		s, err := audit.NewSQL(ctx, openSQLite(b), audit.SQLite, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for b.Loop() {
			if err := s.WriteDurable(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
		baseNS = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(1e9/baseNS, "rows/s")
	})
	b.Run("batched", func(b *testing.B) {
		s, err := audit.NewSQL(ctx, openSQLite(b), audit.SQLite, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ReportAllocs()
		cpu0, cpuOK := processCPU()
		for b.Loop() {
			if err := s.Write(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(1e9/ns, "rows/s")
		if cpu1, ok := processCPU(); ok && cpuOK {
			// CPU time per row, all goroutines: steadier than rows/s on a
			// loaded machine.
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu_ns/row")
		}
		if baseNS > 0 {
			b.ReportMetric(baseNS/ns, "x_baseline_throughput")
		}
	})
}
