package main

import (
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview31Small2AuditPostgresPasswordPastTheCheck: the check looked at
// the URL as net/url reads it, and pgx reads it as libpq does: a password
// after a '#' (net/url's fragment, a value's bytes to pgx), one in a query
// after a '?' inside the user information, and the client key's passphrase
// (sslpassword) reached pgx from the command line.
func TestReview31Small2AuditPostgresPasswordPastTheCheck(t *testing.T) {
	for _, v := range []string{
		"postgres://u@127.0.0.1:1/db?sslmode=disable&x=#&password=s3cretpw",
		"postgres://u@127.0.0.1:1/db#?sslmode=disable&password=s3cretpw",
		"postgres://u?a@127.0.0.1:1/db?sslmode=disable&password=s3cretpw",
		"postgres://u@127.0.0.1:1/db?sslmode=disable&sslpassword=s3cretpw",
		"postgres://u@127.0.0.1:1/db?sslmode=disable&SSLPass%77ord=s3cretpw",
		"postgres://u@127.0.0.1:1/db?sslmode=disable&%20password=s3cretpw",
	} {
		var stderr strings.Builder
		code := run(t.Context(), []string{"serve-http", "--port", "0", "--audit-dir", t.TempDir(), "--audit-postgres", v}, io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "PGPASSWORD") || strings.Contains(stderr.String(), "s3cretpw") {
			t.Errorf("%s: exit %d, want 2 and a refusal naming PGPASSWORD, without the password; stderr:\n%s", v, code, stderr.String())
		}
	}
}

// TestReview31Small2AuditPostgresSchemeCase: net/url lowers a scheme's case
// and pgx does not: POSTGRES://... passed the check, and pgx, not seeing a
// URL, read it as a keyword/value string that sets nothing, and dialled the
// default (the local socket, as the OS user) instead of the host named.
func TestReview31Small2AuditPostgresSchemeCase(t *testing.T) {
	for _, v := range []string{"POSTGRES://u@127.0.0.1:1/db?sslmode=disable", "PostgreSQL://u@127.0.0.1:1/db"} {
		var stderr strings.Builder
		code := run(t.Context(), []string{"demo", "--audit-postgres", v}, io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "postgres://") {
			t.Errorf("%s: exit %d, want 2, a usage error naming postgres://; stderr:\n%s", v, code, stderr.String())
		}
	}
}

// TestReview31Small2AuditPostgresPasswordFromEnv: with the password off the
// command line, it must still reach a server that asks for one: PGPASSWORD
// and ~/.pgpass (at $HOME) are honoured end to end, against a PostgreSQL
// whose role "ticketpw" logs in by SCRAM password; without either, or with
// a wrong one, the start fails (exit 1) and no message shows the password.
func TestReview31Small2AuditPostgresPasswordFromEnv(t *testing.T) {
	pg := testsvc.StartPostgres(t)
	admin, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var dataDir string
	for _, q := range []string{
		"CREATE ROLE ticketpw LOGIN PASSWORD 'pw-s3cret-42'",
		"CREATE DATABASE ticketpw OWNER ticketpw",
		"SET password_encryption = 'scram-sha-256'",
	} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := admin.QueryRow("SHOW data_directory").Scan(&dataDir); err != nil {
		t.Fatal(err)
	}
	// The first matching line decides: the role must give its password.
	hba := filepath.Join(dataDir, "pg_hba.conf")
	old, err := os.ReadFile(hba)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hba, append([]byte("host all ticketpw 127.0.0.1/32 scram-sha-256\n"), old...), 0o600); err != nil {
		t.Fatal(err)
	}
	var ok bool
	if err := admin.QueryRow("SELECT pg_reload_conf()").Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_reload_conf: %v %v", ok, err)
	}
	url := fmt.Sprintf("postgres://ticketpw@127.0.0.1:%d/ticketpw?sslmode=disable", pg.Port)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PGPASSFILE", "")

	fails := func(what string) {
		t.Helper()
		var stderr strings.Builder
		code := run(t.Context(), []string{"serve-http", "--port", "0", "--audit-dir", t.TempDir(), "--audit-postgres", url}, io.Discard, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), "--audit-postgres") || strings.Contains(stderr.String(), "pw-s3cret-42") {
			t.Errorf("%s: exit %d, want 1 naming --audit-postgres without the password; stderr:\n%s", what, code, stderr.String())
		}
	}
	t.Setenv("PGPASSWORD", "")
	fails("no password")
	t.Setenv("PGPASSWORD", "wrong")
	fails("a wrong PGPASSWORD")

	t.Setenv("PGPASSWORD", "pw-s3cret-42")
	s := startServeHTTP(t, "--audit-dir", t.TempDir(), "--audit-postgres", url)
	restPost(t, s.base, "search_docs", "token-alice", "s1", searchBody)
	if c := s.stop(); c != 0 {
		t.Fatalf("PGPASSWORD: exit %d; stderr:\n%s", c, s.stderr)
	}

	t.Setenv("PGPASSWORD", "")
	if err := os.WriteFile(filepath.Join(home, ".pgpass"), []byte("127.0.0.1:*:ticketpw:ticketpw:pw-s3cret-42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = startServeHTTP(t, "--audit-dir", t.TempDir(), "--audit-postgres", url)
	restPost(t, s.base, "search_docs", "token-alice", "s1", searchBody)
	if c := s.stop(); c != 0 {
		t.Fatalf("~/.pgpass: exit %d; stderr:\n%s", c, s.stderr)
	}
	var n int
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/ticketpw?sslmode=disable", pg.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT count(*) FROM audit_log WHERE tool = 'search_docs'").Scan(&n); err != nil || n != 2 {
		t.Errorf("audit_log: %d search_docs records, %v; want 2 (one call's outcome per start)", n, err)
	}
}
