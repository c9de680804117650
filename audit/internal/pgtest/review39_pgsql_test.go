package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// review39Cuts is what review39CommitsLost does to the sink's messages.
type review39Cuts struct {
	// script says what becomes of each COMMIT the sink sends, in turn:
	// 'c' the connection ends before the server gets it, 'a' the server
	// commits and the connection ends before its answer. The COMMITs past
	// the script pass.
	script string
	// lookups is how many of the sink's messages (pings aside) the proxy
	// ends the connection of once the script is played out (the last
	// COMMIT cut, or its answer dropped): the sink's looks for the batch
	// then fail without an answer.
	lookups atomic.Int32
	// needle, when not empty, narrows lookups to the messages holding it.
	needle string
	// Of what was done: COMMITs seen, COMMITs cut, answers dropped,
	// messages cut after the script.
	commits, commitsCut, lookupsCut atomic.Int32
	answers                         *atomic.Int32
	over                            atomic.Bool // the last 'c' of the script was cut
}

// review39CommitsLost returns a PostgreSQL sink on p's database (the
// database dbname as user, when not empty) reached
// through two proxies (testsvc.CutProxy on the sink's side, then
// testsvc.CommitAnswerDropper) that play c's script, once armed is set,
// and a function returning every error the sink reported (OnError). The
// database handle closes with the test; the sink is the test's to close.
func review39CommitsLost(t *testing.T, p *pgFailServer, c *review39Cuts, user, dbname string) (s *audit.SQLSink, armed *atomic.Bool, errs func() []string) {
	t.Helper()
	if user == "" {
		user, dbname = "postgres", p.name
	}
	server, drop, dropped := testsvc.CommitAnswerDropper(t, p.pg.Port)
	c.answers, armed = dropped, new(atomic.Bool)
	client := testsvc.CutProxy(t, server.Addr().(*net.TCPAddr).Port, false, func(piece []byte) bool {
		if !armed.Load() {
			return false
		}
		if bytes.HasPrefix(piece, cancelRequest) {
			return true // a cancel request could end what the test lets through
		}
		if bytes.Contains(bytes.ToLower(piece), []byte("commit\x00")) {
			k := int(c.commits.Add(1)) - 1
			if k >= len(c.script) {
				return false
			}
			if c.script[k] == 'a' {
				drop.Store(true)
				return false
			}
			c.commitsCut.Add(1)
			c.over.Store(k == len(c.script)-1)
			return true
		}
		over := c.over.Load() || strings.HasSuffix(c.script, "a") && dropped.Load() > 0
		if over && !bytes.Contains(piece, []byte("-- ping")) && bytes.Contains(piece, []byte(c.needle)) && c.lookups.Add(-1) >= 0 {
			c.lookupsCut.Add(1)
			return true
		}
		return false
	})
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", user, client.Addr(), dbname))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var mu sync.Mutex
	var reported []string
	s, err = audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err.Error())
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s, armed, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), reported...)
	}
}

// TestReview39ThreeCommitsWithoutAnswer: the three attempts of a batch all
// fail without an answer from the server. In answer_lost the first two
// COMMITs are lost on their way to it, the third is committed and its
// answer lost: the sink must find the batch committed and insert none of
// it again, also when its first look-ups fail without an answer too
// (lookups_fail: the server's word on the transaction; row_lookup_fails:
// the search for its rows, once the server said the transaction ended).
// In none_committed the three COMMITs are lost on their way and the first
// look-ups fail: the sink must insert the rows, not take a failed look-up
// for a row found. Every event once, none counted lost, Flush and Close
// nil. Inserting a committed batch again records each of its events twice
// (an audit trail that shows one refund as two); skipping a row not there
// loses it without a word. In answer_lost, Stats().Batches counts the
// transactions that hold the rows (one per xmin), as its doc says.
func TestReview39ThreeCommitsWithoutAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string
		lookups int32
		needle  string
	}{
		{name: "answer_lost", script: "cca"},
		{name: "answer_lost_lookups_fail", script: "cca", lookups: 1},
		{name: "answer_lost_row_lookup_fails", script: "cca", lookups: 1, needle: "FROM audit_log WHERE"},
		{name: "none_committed_lookups_fail", script: "ccc", lookups: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startFailServer(t)
			cuts := &review39Cuts{script: tc.script, needle: tc.needle}
			cuts.lookups.Store(tc.lookups)
			s, armed, errs := review39CommitsLost(t, p, cuts, "", "")
			ctx := context.Background()
			review39Arm(t, s, armed)
			const n = 5
			want := map[string]int{"before-00000": 1}
			for i := range n {
				e := failEvent("batch", i)
				want[e.CorrelationID] = 1
				if err := s.Write(ctx, e); err != nil {
					t.Fatalf("Write(%s): %v", e.CorrelationID, err)
				}
			}
			flushErr := s.Flush(ctx)
			closeErr := s.Close()
			wantCut := [3]int32{int32(strings.Count(tc.script, "c")), int32(strings.Count(tc.script, "a")), tc.lookups}
			if got := [3]int32{cuts.commitsCut.Load(), cuts.answers.Load(), cuts.lookupsCut.Load()}; got != wantCut {
				t.Fatalf("proxies cut %d COMMITs, dropped %d answers, cut %d look-ups; want %v: the test did not build its case (OnError: %q)",
					got[0], got[1], got[2], wantCut, errs())
			}
			if flushErr != nil || closeErr != nil {
				t.Errorf("Flush() = %v, Close() = %v, want nil, nil", flushErr, closeErr)
			}
			got := counts(t, p.db)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("rows per correlation id = %v, want %v (every event once); Stats: %+v, OnError: %q",
					got, want, s.Stats(), errs())
			}
			st := s.Stats()
			if st.Rows != n+1 || st.Lost != 0 {
				t.Errorf("Stats() = %+v, want Rows %d, Lost 0", st, n+1)
			}
			if tc.name == "answer_lost" {
				if xacts := review39Transactions(t, p.db); st.Batches != xacts {
					t.Errorf("Stats().Batches = %d, want %d: the transactions that hold the rows", st.Batches, xacts)
				}
			}
			if !strings.Contains(strings.Join(errs(), "\n"), "(attempt 3)") {
				t.Errorf("OnError was not told of the batch's third attempt: %q", errs())
			}
		})
	}
}

// review39Transactions returns how many transactions hold the rows of
// audit_log (their distinct xmin).
func review39Transactions(t *testing.T, db *sql.DB) uint64 {
	t.Helper()
	var n uint64
	if err := db.QueryRow(`SELECT count(DISTINCT xmin::text) FROM audit_log`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReview39AbortedBatchOfRepeats: the COMMIT of a batch is lost on its
// way to the server, and both rows of the batch repeat, in every column
// the sink's look-up compares, records the table holds (the same gateway
// request recorded by two sessions). The server says the transaction
// aborted: the sink must insert the batch again without looking for its
// rows, which it would take for the batch and drop, with no error and
// nothing counted lost.
func TestReview39AbortedBatchOfRepeats(t *testing.T) {
	p := startFailServer(t)
	cuts := &review39Cuts{script: "c"}
	s, armed, errs := review39CommitsLost(t, p, cuts, "", "")
	ctx := context.Background()
	ev := func(id, session string) *audit.Event {
		e := failEvent(id, 0)
		e.SessionID = session
		return e
	}
	for _, e := range []*audit.Event{ev("rep1", "first"), ev("rep2", "first")} {
		if err := s.Write(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	for _, e := range []*audit.Event{ev("rep1", "second"), ev("rep2", "second")} {
		if err := s.Write(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	flushErr := s.Flush(ctx)
	closeErr := s.Close()
	if cuts.commitsCut.Load() != 1 {
		t.Fatalf("the proxy cut %d COMMITs, want 1: the test did not build its case (OnError: %q)", cuts.commitsCut.Load(), errs())
	}
	if flushErr != nil || closeErr != nil {
		t.Errorf("Flush() = %v, Close() = %v, want nil, nil", flushErr, closeErr)
	}
	var got []string
	rs, err := p.db.Query(`SELECT correlation_id || '/' || session_id FROM audit_log ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var k string
		if err := rs.Scan(&k); err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"rep1-00000/first", "rep1-00000/second", "rep2-00000/first", "rep2-00000/second"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows = %v, want %v; Stats: %+v, OnError: %q", got, want, s.Stats(), errs())
	}
	if st := s.Stats(); st.Rows != 4 || st.Lost != 0 {
		t.Errorf("Stats() = %+v, want Rows 4, Lost 0", st)
	}
}

// TestReview39NoTxidStatus: the sink's role may not call txid_status
// (revoked from PUBLIC), and a batch's three attempts fail without an
// answer, the third after it committed (its answer lost): the server's
// refusal to tell the transaction's status must send the sink looking for
// the rows, which it finds. Taking the refusal for "not committed" records
// the batch twice; taking it for a failed look-up keeps the rows from
// being inserted, and then drops them as refused.
func TestReview39NoTxidStatus(t *testing.T) {
	p := startFailServer(t)
	if _, err := p.admin.Exec(`CREATE ROLE sink LOGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.admin.Exec(`CREATE DATABASE sinkdb OWNER sink`); err != nil {
		t.Fatal(err)
	}
	su, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/sinkdb?sslmode=disable", p.pg.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close()
	if _, err := su.Exec(`REVOKE EXECUTE ON FUNCTION txid_status(bigint) FROM PUBLIC`); err != nil {
		t.Fatal(err)
	}
	cuts := &review39Cuts{script: "cca"}
	s, armed, errs := review39CommitsLost(t, p, cuts, "sink", "sinkdb")
	ctx := context.Background()
	armed.Store(true)
	const n = 3
	want := map[string]int{}
	for i := range n {
		e := failEvent("role", i)
		want[e.CorrelationID] = 1
		if err := s.Write(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	flushErr := s.Flush(ctx)
	closeErr := s.Close()
	if cuts.commitsCut.Load() != 2 || cuts.answers.Load() != 1 {
		t.Errorf("proxies cut %d COMMITs, dropped %d answers; want 2, 1 (the sink inserted the batch three times)",
			cuts.commitsCut.Load(), cuts.answers.Load())
	}
	if flushErr != nil || closeErr != nil {
		t.Errorf("Flush() = %v, Close() = %v, want nil, nil", flushErr, closeErr)
	}
	if got := counts(t, su); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows per correlation id = %v, want %v; Stats: %+v, OnError: %q", got, want, s.Stats(), errs())
	}
	if st := s.Stats(); st.Rows != n || st.Lost != 0 {
		t.Errorf("Stats() = %+v, want Rows %d, Lost 0", st, n)
	}
}

// TestReview39CommitUnderWayStatusUnanswered: a batch's connection ends
// right after its COMMIT reaches the server, which takes a second more to
// commit it (a deferred trigger; in production a slow WAL flush), and the
// sink's first question about the transaction's status gets no answer
// either (status_unanswered), or its order to end the transaction's
// backend gets none (end_unanswered: OnError is told, as of every failure
// of the writer). The sink must ask again, not look for the rows at once:
// they are not there yet, and inserting the batch again records it twice
// once the first commit completes.
func TestReview39CommitUnderWayStatusUnanswered(t *testing.T) {
	for _, tc := range []struct {
		name, needle, report string
	}{
		{name: "status_unanswered"},
		{name: "end_unanswered", needle: "pg_terminate_backend", report: "audit: ending the backend of transaction"},
	} {
		t.Run(tc.name, func(t *testing.T) { review39CommitUnderWay(t, tc.needle, tc.report) })
	}
}

// review39CommitUnderWay is TestReview39CommitUnderWayStatusUnanswered
// with the first message holding needle (any, when empty; pings aside)
// after the COMMIT cut, and an OnError that must hold report.
func review39CommitUnderWay(t *testing.T, needle, report string) {
	t.Helper()
	p := startFailServer(t)
	mid, cut, cuts := commitCutter(t, p.pg.Port, passCommit)
	var lookupCut atomic.Bool
	front := testsvc.CutProxy(t, mid.Addr().(*net.TCPAddr).Port, false, func(piece []byte) bool {
		if cuts.Load() == 0 || bytes.Contains(piece, []byte("-- ping")) || bytes.HasPrefix(piece, cancelRequest) || !bytes.Contains(piece, []byte(needle)) {
			return false
		}
		return lookupCut.CompareAndSwap(false, true)
	})
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", front.Addr(), p.name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mu sync.Mutex
	var reported []string
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err.Error())
	}})
	if err != nil {
		t.Fatal(err)
	}
	slowCommits(t, p.db, "1")
	ctx := context.Background()
	cut.Store(1)
	const n = 3
	want := map[string]int{}
	for i := range n {
		e := failEvent("slow", i)
		if i == 0 {
			e.Tool = "slow"
		}
		want[e.CorrelationID] = 1
		if err := s.Write(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	flushErr := s.Flush(ctx)
	closeErr := s.Close()
	mu.Lock()
	errs := append([]string(nil), reported...)
	mu.Unlock()
	if cuts.Load() != 1 || !lookupCut.Load() {
		t.Fatalf("the proxies cut %d COMMITs and the look-up: %v; want 1, true: the test did not build its case (OnError: %q)", cuts.Load(), lookupCut.Load(), errs)
	}
	if flushErr != nil || closeErr != nil {
		t.Errorf("Flush() = %v, Close() = %v, want nil, nil", flushErr, closeErr)
	}
	// The first transaction, if the sink did not end its backend, commits
	// within its second: a SHARE lock waits for every writer of the table.
	tx, err := p.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`LOCK TABLE audit_log IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := counts(t, p.db); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows per correlation id = %v, want %v (every event once); Stats: %+v, OnError: %q", got, want, s.Stats(), errs)
	}
	if !strings.Contains(strings.Join(errs, "\n"), report) {
		t.Errorf("OnError was not told %q: %q", report, errs)
	}
}

// TestReview39BatchesCountsFoundBatchOnce: Stats().Batches is "transactions
// committed by the background writer". A batch whose three COMMITs failed
// without an answer (the third committed, its answer lost) and whose first
// look-up after them failed too is found row by row, and each row found
// counted one more transaction: 1 + 5 for the 2 transactions that hold the
// 6 rows. An operator who reads Batches (rows per transaction, how often the
// writer commits) was told of transactions that never were.
func TestReview39BatchesCountsFoundBatchOnce(t *testing.T) {
	p := startFailServer(t)
	cuts := &review39Cuts{script: "cca"}
	cuts.lookups.Store(1)
	s, armed, errs := review39CommitsLost(t, p, cuts, "", "")
	ctx := context.Background()
	review39Arm(t, s, armed)
	for i := range 5 {
		if err := s.Write(ctx, failEvent("batch", i)); err != nil {
			t.Fatal(err)
		}
	}
	flushErr := s.Flush(ctx)
	closeErr := s.Close()
	if cuts.commitsCut.Load() != 2 || cuts.answers.Load() != 1 || cuts.lookupsCut.Load() != 1 {
		t.Fatalf("proxies cut %d COMMITs, dropped %d answers, cut %d look-ups; want 2, 1, 1: the test did not build its case (OnError: %q)",
			cuts.commitsCut.Load(), cuts.answers.Load(), cuts.lookupsCut.Load(), errs())
	}
	if flushErr != nil || closeErr != nil {
		t.Fatalf("Flush() = %v, Close() = %v, want nil, nil", flushErr, closeErr)
	}
	if got, want := s.Stats().Batches, review39Transactions(t, p.db); got != want {
		t.Errorf("Stats().Batches = %d, want %d: the transactions that hold the rows (Stats: %+v)", got, want, s.Stats())
	}
}

// review39Arm records the event "before" through s, with nothing cut yet,
// and then arms the proxies of review39CommitsLost.
func review39Arm(t *testing.T, s *audit.SQLSink, armed *atomic.Bool) {
	t.Helper()
	ctx := context.Background()
	if err := s.Write(ctx, failEvent("before", 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
}

// slowCommits makes every commit of an event whose tool is "slow" take
// seconds longer (a deferred trigger that sleeps), on the database db
// reaches.
func slowCommits(t *testing.T, db *sql.DB, seconds string) {
	t.Helper()
	if _, err := db.Exec(`CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.tool = 'slow' THEN PERFORM pg_sleep(` + seconds + `); END IF; RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON audit_log DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION slow_commit()`); err != nil {
		t.Fatal(err)
	}
}
