package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestPostgresCommitAnswerLost: the connection breaks after the server
// committed a batch but before its answer reached the sink (a proxy drops
// the connection instead of passing the COMMIT's answer on). The sink does
// not know whether the batch is in; it must not insert it a second time.
func TestPostgresCommitAnswerLost(t *testing.T) {
	pg := testsvc.StartPostgres(t)
	admin, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE acklost"); err != nil {
		t.Fatal(err)
	}
	direct, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/acklost?sslmode=disable", pg.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()

	ln, drop, dropped := testsvc.CommitAnswerDropper(t, pg.Port)
	proxied, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@%s/acklost?sslmode=disable", ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer proxied.Close()

	s, err := audit.NewSQL(context.Background(), proxied, audit.Postgres, &audit.SQLOptions{OnError: func(err error) { t.Logf("sink: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	drop.Store(true)
	const n = 20
	for i := range n {
		if err := s.Write(context.Background(), failEvent("ack", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Errorf("Flush: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if dropped.Load() != 1 {
		t.Fatalf("the proxy dropped %d COMMIT answers, want 1: the test did not break a commit", dropped.Load())
	}
	got := counts(t, direct)
	for i := range n {
		if id := fmt.Sprintf("ack-%05d", i); got[id] != 1 {
			t.Errorf("%s recorded %d times, want once", id, got[id])
		}
	}
}
