package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

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
	b.Run("kept", func(b *testing.B) {
		// Keep takes each event over: a fresh copy per call (its
		// allocation counted), and arguments to hash, as the guard hands
		// over its outcome records.
		s, err := audit.OpenJSONL(filepath.Join(b.TempDir(), "a.jsonl"), nil)
		if err != nil {
			b.Fatal(err)
		}
		args := json.RawMessage(`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival"}`)
		b.ReportAllocs()
		for b.Loop() {
			k := new(audit.Event)
			*k = *e
			k.ArgsSHA256 = ""
			if err := s.Keep(ctx, k, args); err != nil {
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
	// batched writes the events next returns with Write or, with args,
	// hands a copy of each over with Keep, its hash cleared, so that the
	// sink's writer hashes args, as for a guard's outcome records.
	batched := func(b *testing.B, opts *audit.SQLOptions, next func(i int) *audit.Event, args json.RawMessage) {
		s, err := audit.NewSQL(ctx, openSQLite(b), audit.SQLite, opts)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ReportAllocs()
		cpu0, cpuOK := processCPU()
		start := time.Now()
		i := 0
		for b.Loop() {
			var err error
			if args == nil {
				err = s.Write(ctx, next(i))
			} else {
				k := new(audit.Event)
				*k = *next(i)
				k.ArgsSHA256 = ""
				err = s.Keep(ctx, k, args)
			}
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		// rows/s counts the time until every row is committed: b.Loop
		// stops its timer (ns/op) when the last Write has queued its row,
		// up to QueueSize rows earlier.
		ns := float64(time.Since(start).Nanoseconds()) / float64(b.N)
		b.ReportMetric(1e9/ns, "rows/s")
		if cpu1, ok := processCPU(); ok && cpuOK {
			// CPU time per row, all goroutines: steadier than rows/s on a
			// loaded machine.
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu_ns/row")
		}
		if baseNS > 0 {
			b.ReportMetric(baseNS/ns, "x_baseline_throughput")
		}
	}
	// The same event again and again.
	b.Run("batched", func(b *testing.B) { batched(b, nil, func(int) *audit.Event { return e }, nil) })
	// Events as a guard writes them: correlation ids from a counter (the
	// shape of internal/corrid's), time going forward, 64 sessions of 16
	// subjects calling 8 tools; with the default transactions and with
	// transactions of at most 1024 rows.
	varied := func(b *testing.B, opts *audit.SQLOptions, args json.RawMessage, requestIDs bool) {
		v := benchEvent()
		t0 := v.Time
		sessions, subjects, tools := make([]string, 64), make([]string, 16), make([]string, 8)
		for i := range sessions {
			sessions[i] = fmt.Sprintf("sess-%016x", uint64(i)*0x9e3779b97f4a7c15)
		}
		for i := range subjects {
			subjects[i] = fmt.Sprintf("user%02d@example.com", i)
		}
		for i := range tools {
			tools[i] = fmt.Sprintf("tool_%d", i)
		}
		batched(b, opts, func(i int) *audit.Event {
			v.CorrelationID = fmt.Sprintf("5eed12345678-%012x", i)
			v.Time = t0.Add(time.Duration(i) * time.Microsecond)
			v.SessionID, v.Subject, v.Tool = sessions[i%64], subjects[i/64%16], tools[i%8]
			v.Allowed = i%10 != 0
			if requestIDs {
				v.RequestID = fmt.Sprintf("9a1b2c3d4e5f-%012x", i)
			}
			return v
		}, args)
	}
	b.Run("batched_varied", func(b *testing.B) { varied(b, nil, nil, false) })
	b.Run("batched_varied_batch1024", func(b *testing.B) { varied(b, &audit.SQLOptions{BatchSize: 1024}, nil, false) })
	// Every event with a request id, as behind a gateway: each row also
	// goes into the partial index on request_id (schema version 5).
	b.Run("batched_varied_request_ids", func(b *testing.B) { varied(b, nil, nil, true) })
	// The same events handed over with Keep: the writer goroutine hashes
	// each one's arguments before it inserts the row.
	b.Run("batched_varied_kept", func(b *testing.B) {
		varied(b, nil, json.RawMessage(`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival"}`), false)
	})
	// WriteDurable while another goroutine floods the sink with Write:
	// the latency of one durable event behind the writer's transactions.
	b.Run("durable_during_flood", func(b *testing.B) {
		s, err := audit.NewSQL(ctx, openSQLite(b), audit.SQLite, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			v := benchEvent()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v.CorrelationID = fmt.Sprintf("flood-%08x", i)
				v.SessionID = fmt.Sprintf("sess-%02d", i%64)
				if err := s.Write(ctx, v); err != nil {
					b.Error(err)
					return
				}
			}
		})
		time.Sleep(100 * time.Millisecond) // the queue fills
		var lat []time.Duration
		d := benchEvent()
		for b.Loop() {
			t := time.Now()
			if err := s.WriteDurable(ctx, d); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t))
		}
		close(stop)
		wg.Wait()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1e3, "p50_ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1e3, "p99_ms")
	})
}
