package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview19SQLiteWritersRacingClose: writers racing Close on SQLite
// (Write, Keep with arguments for the writer to hash, WriteDurable and
// Flush) get nil or ErrClosed, never another error and never a hang; the
// table then holds exactly the events that were acknowledged, each once,
// and a kept event carries the hash of its arguments.
func TestReview19SQLiteWritersRacingClose(t *testing.T) {
	for round := range 3 {
		db := openSQLite(t)
		s, err := audit.NewSQL(context.Background(), db, audit.SQLite, &audit.SQLOptions{QueueSize: 32, BatchSize: 64})
		if err != nil {
			t.Fatal(err)
		}
		args := json.RawMessage(`{"note":"\ud800","b":1}`)
		const writers, each = 8, 300
		acked := make(chan string, writers*each)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					id := fmt.Sprintf("w%d-%d", w, i)
					e := event(id, i)
					var err error
					switch i % 4 {
					case 0:
						err = s.Write(context.Background(), e)
					case 1:
						err = s.WriteDurable(context.Background(), e)
					case 2:
						e.ArgsSHA256 = ""
						err = s.Keep(context.Background(), e, args)
					default:
						if err = s.Write(context.Background(), e); err == nil {
							acked <- id
							id = ""
							err = s.Flush(context.Background())
						}
					}
					switch {
					case err == nil:
						if id != "" {
							acked <- id
						}
					case errors.Is(err, audit.ErrClosed):
						return
					default:
						t.Errorf("round %d: %s racing Close: %v", round, id, err)
						return
					}
				}
			})
		}
		time.Sleep(time.Duration(5+10*round) * time.Millisecond)
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Errorf("round %d: Close: %v", round, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: Close did not return in 30s", round)
		}
		wg.Wait()
		close(acked)
		want := map[string]bool{}
		for id := range acked {
			want[id] = true
		}
		rows, err := db.Query(`SELECT correlation_id, args_sha256 FROM audit_log`)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for rows.Next() {
			var id, h string
			if err := rows.Scan(&id, &h); err != nil {
				t.Fatal(err)
			}
			got[id]++
			if h == "" || (h != audit.ArgsSHA256(args) && h != event(id, 0).ArgsSHA256) {
				t.Errorf("round %d: %s has args_sha256 %q", round, id, h)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		bad := 0
		for id := range want {
			if got[id] != 1 && bad < 5 {
				bad++
				t.Errorf("round %d: acknowledged %s is %d times in audit_log", round, id, got[id])
			}
		}
		for id, n := range got {
			if !want[id] && bad < 10 {
				bad++
				t.Errorf("round %d: %s is %d times in audit_log, but its write was refused", round, id, n)
			}
		}
		if st := s.Stats(); st.Lost != 0 || int(st.Rows) != len(want) {
			t.Errorf("round %d: Stats = %+v, %d acknowledged", round, st, len(want))
		}
		if len(want) == 0 || len(want) == writers*each {
			t.Logf("round %d: %d of %d acknowledged: Close did not race the writers", round, len(want), writers*each)
		}
	}
}
