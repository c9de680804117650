package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newPostgresDB creates a database of its own on pg and returns its URL
// and a connection to it for the test's checks.
func newPostgresDB(t *testing.T, pg *testsvc.Postgres, name string) (string, *sql.DB) {
	t.Helper()
	admin, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.Port, name)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return url, db
}

// pgEvents returns the records of the audit_log table of db that match f.
func pgEvents(t *testing.T, db *sql.DB, f audit.Filter) []audit.Event {
	t.Helper()
	evs, err := audit.QuerySQL(context.Background(), db, audit.Postgres, f)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// withoutRunFacts clears what differs between two runs of the same calls:
// the time, the latency and the correlation id.
func withoutRunFacts(evs []audit.Event) []audit.Event {
	out := make([]audit.Event, len(evs))
	for i, e := range evs {
		e.Time, e.LatencyMS, e.CorrelationID = time.Time{}, 0, ""
		out[i] = e
	}
	return out
}

// noFile fails t if path exists.
func noFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: %v, want no such file", path, err)
	}
}

// TestReview12AuditPostgres: the seed writes its audit_log to SQLite only.
// With --audit-postgres the same records go to PostgreSQL (the JSONL file
// is kept): over REST, over stdio and in the demo, queryable by session,
// the same in content as the SQLite path's.
func TestReview12AuditPostgres(t *testing.T) {
	pg := testsvc.StartPostgres(t)

	t.Run("rest_records_match_sqlite", func(t *testing.T) {
		t.Setenv(auditKeyEnv, strings.Repeat("ab", 32)) // the same args_sha256 in both
		url, db := newPostgresDB(t, pg, "ticket_rest")
		dirP, dirS := t.TempDir(), t.TempDir()
		p := startServeHTTP(t, "--audit-dir", dirP, "--audit-postgres", url)
		s := startServeHTTP(t, "--audit-dir", dirS)
		for _, srv := range []*served{p, s} {
			restPost(t, srv.base, "create_ticket", "token-alice", "s1", `{"arguments": {"title": "Broken build", "body": "CI red"}}`)
			for range 6 {
				restPost(t, srv.base, "search_docs", "token-alice", "s1", searchBody)
			}
			restPost(t, srv.base, "search_docs", "token-bob", "s1", `{"arguments": {"query": "deploy"}}`)
			restPost(t, srv.base, "search_docs", "", "s1", searchBody)
			restPost(t, srv.base, "drop_tables", "token-alice", "s1", `{"arguments": {}}`)
			restPost(t, srv.base, "search_docs", "token-alice", "s1", `{"arguments": {"query": 7}}`)
			restPost(t, srv.base, "list_tools", "token-bob", "s2", `{"arguments": {}}`)
		}
		p.stop()
		s.stop()
		noFile(t, filepath.Join(dirP, auditSQLite))

		sdb, err := audit.OpenSQLite(filepath.Join(dirS, auditSQLite))
		if err != nil {
			t.Fatal(err)
		}
		defer sdb.Close()
		lite, err := audit.QuerySQL(context.Background(), sdb, audit.SQLite, audit.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		post := pgEvents(t, db, audit.Filter{})
		if len(post) != 12 {
			t.Errorf("%d records in PostgreSQL, want 12: %+v", len(post), rows(post))
		}
		if diff := cmp.Diff(withoutRunFacts(lite), withoutRunFacts(post)); diff != "" {
			t.Errorf("the same calls, SQLite vs PostgreSQL (-sqlite +postgres):\n%s", diff)
		}
		// The JSONL file is kept, and holds exactly what PostgreSQL does.
		jsonl, err := audit.QueryJSONL(filepath.Join(dirP, auditJSONL), audit.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(jsonl, post); diff != "" {
			t.Errorf("JSONL vs PostgreSQL of one server (-jsonl +postgres):\n%s", diff)
		}
		// By session.
		sid := restSessionID("s1", "alice")
		want := []row{{sid, "alice", "create_ticket", "write", "WRITE_NOT_ALLOWED", false, false}}
		for range 5 {
			want = append(want, row{sid, "alice", "search_docs", "read", "", true, false})
		}
		want = append(want, row{sid, "alice", "search_docs", "read", "RATE_LIMIT_EXCEEDED", false, false},
			// Refused by the REST adapter before the guard, in the session
			// it names (review23).
			row{sid, "alice", "drop_tables", "", "TOOL_NOT_FOUND", false, false},
			row{sid, "alice", "search_docs", "read", "INVALID_ARGUMENTS", false, false})
		got := pgEvents(t, db, audit.Filter{SessionID: sid, Phase: audit.PhaseOutcome})
		if diff := cmp.Diff(want, rows(got)); diff != "" {
			t.Errorf("alice's session s1 in PostgreSQL, %d records (-want +got):\n%s", len(got), diff)
		}
	})

	t.Run("stdio_with_redis", func(t *testing.T) {
		r := testsvc.StartRedis(t)
		url, db := newPostgresDB(t, pg, "ticket_stdio")
		dir := t.TempDir()
		cmd := exec.Command(ticketBinary(t), "serve-stdio", "--audit-dir", dir, "--audit-postgres", url, "--redis", r.Addr)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), tokenEnv + "=token-alice"}
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect: %v; stderr:\n%s", err, stderr)
		}
		var codes []string
		for range 6 {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}})
			codes = append(codes, toolCode(t, res, err))
		}
		cs.Close()
		if diff := cmp.Diff([]string{"", "", "", "", "", "RATE_LIMIT_EXCEEDED"}, codes); diff != "" {
			t.Errorf("six calls over stdio, limits on Redis (-want +got):\n%s", diff)
		}
		m := regexp.MustCompile(`session (stdio-\S+)`).FindStringSubmatch(stderr.String())
		if m == nil {
			t.Fatalf("no session id on stderr:\n%s", stderr)
		}
		post := pgEvents(t, db, audit.Filter{SessionID: m[1]})
		if len(post) != 6 || post[0].Subject != "alice" || post[5].Code != "RATE_LIMIT_EXCEEDED" {
			t.Errorf("PostgreSQL records of %s: %+v", m[1], rows(post))
		}
		jsonl, err := audit.QueryJSONL(filepath.Join(dir, auditJSONL), audit.Filter{SessionID: m[1]})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(jsonl, post); diff != "" {
			t.Errorf("JSONL vs PostgreSQL (-jsonl +postgres):\n%s", diff)
		}
		noFile(t, filepath.Join(dir, auditSQLite))
	})

	t.Run("demo_reads_postgres", func(t *testing.T) {
		url, db := newPostgresDB(t, pg, "ticket_demo")
		var out, stderr bytes.Buffer
		if code := run(t.Context(), []string{"demo", "--audit-postgres", url}, &out, &stderr); code != 0 {
			t.Fatalf("demo: exit %d; stderr:\n%s", code, stderr.String())
		}
		lines := burstSessionLine.FindAllStringSubmatch(out.String(), -1)
		if !strings.Contains(out.String(), "(PostgreSQL audit_log;") || len(lines) != 6 {
			t.Fatalf("demo output: want the burst session's 6 records read from PostgreSQL:\n%s", out.String())
		}
		sid := lines[0][1] // its name ends in the run's id (review23b)
		if got := pgEvents(t, db, audit.Filter{SessionID: sid, Phase: audit.PhaseOutcome}); len(got) != 6 {
			t.Errorf("PostgreSQL holds %d records of %s, want 6", len(got), sid)
		}
	})
}

// TestReview12AuditPostgresFlagIsChecked: an --audit-postgres that is empty
// or not a postgres:// URL with a host is a usage error (exit 2); a
// database that does not answer at start is an error (exit 1), never a
// start without the audit table. No message shows the URL's password.
func TestReview12AuditPostgresFlagIsChecked(t *testing.T) {
	closed := closedAddr(t)
	for _, c := range []struct {
		name, value string
		code        int
		want        string
	}{
		{"empty", "", 2, "--audit-postgres: empty"},
		{"key_value", "host=127.0.0.1 user=postgres password=s3cret", 2, "postgres://"},
		{"other_scheme", "mysql://u:s3cret@127.0.0.1/db", 2, "postgres://"},
		{"no_host", "postgres://u:s3cret@/db", 2, "host"},
		{"bad_port", "postgres://u@127.0.0.1:99999/db", 2, "--audit-postgres"},
		{"bad_option", "postgres://u@127.0.0.1/db?sslmode=bogus", 2, "--audit-postgres"},
		{"password_and_bad_option", "postgres://u@127.0.0.1/db?password=s3cret&sslmode=bogus", 2, "PGPASSWORD"},
		{"unreachable", "postgres://u@" + closed + "/db?sslmode=disable", 1, "--audit-postgres"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A URL with a password is refused (review31); the password
			// comes from PGPASSWORD, which no message shows either.
			t.Setenv("PGPASSWORD", "s3cret")
			stderr := &syncBuffer{}
			code := run(t.Context(), []string{"serve-http", "--port", "0", "--audit-dir", t.TempDir(), "--audit-postgres", c.value}, io.Discard, stderr)
			if code != c.code || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "s3cret") {
				t.Errorf("--audit-postgres %q: exit %d, stderr %q; want exit %d mentioning %q, no password", c.value, code, stderr, c.code, c.want)
			}
		})
	}
}
