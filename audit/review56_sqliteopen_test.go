package audit_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview56OpenSQLiteDanglingLink: OpenSQLite on a path that is a
// symbolic link to a file not there yet. Its O_CREATE|O_EXCL pre-create
// does not follow the link and failed with EEXIST, which it took for "the
// database exists": SQLite then created the link's target with mode 0644,
// readable by every user of the machine, where the doc promises 0600.
// Refused, as OpenJSONL refuses such a link (TestReview53DanglingLinkRefused):
// nothing is created where the link points. A link to a database that
// exists still opens it.
func TestReview56OpenSQLiteDanglingLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "data", "audit.db")
	if err := os.Mkdir(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "audit.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	db, err := audit.OpenSQLite(link)
	if err == nil {
		db.Close()
		fi, serr := os.Stat(target)
		if serr == nil {
			t.Fatalf("OpenSQLite of a dangling link: nil error, and its target created with mode %v", fi.Mode().Perm())
		}
		t.Fatal("OpenSQLite of a dangling link: nil error")
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenSQLite of a dangling link: %v, want an error wrapping os.ErrNotExist", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}

	// The target made (as OpenSQLite makes a new file), the link opens it.
	db, err = audit.OpenSQLite(target)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = audit.OpenSQLite(link)
	if err != nil {
		t.Fatalf("OpenSQLite of a link to a database: %v", err)
	}
	defer db.Close()
	s, err := audit.NewSQL(context.Background(), db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link itself was replaced: %v, %v", fi, err)
	}
}

// TestReview56NewSQLReadOnlySQLite: a SQLite database that takes no writes
// (here opened mode=ro; a file the process may only read, a read-only
// mount do the same). NewSQL accepted one whose schema was current: every
// event then failed in the background writer, each call needing its audit
// was refused, and only Close told "N events not recorded". On an empty
// one, it retried the read-only error for 30 s. NewSQL must refuse it at
// once, saying it is read-only.
func TestReview56NewSQLReadOnlySQLite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema bool
	}{{"schema_current", true}, {"empty", false}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.db")
			db, err := audit.OpenSQLite(path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.schema {
				s, err := audit.NewSQL(context.Background(), db, audit.SQLite, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			ro, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)&_txlock=immediate")
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			start := time.Now()
			s, err := audit.NewSQL(context.Background(), ro, audit.SQLite, &audit.SQLOptions{OnError: func(error) {}})
			took := time.Since(start)
			if err == nil {
				s.Close()
				t.Fatal("NewSQL on a read-only database: nil error, want it refused")
			}
			if !strings.Contains(err.Error(), "read-only") {
				t.Errorf("NewSQL on a read-only database: %v, want an error saying it is read-only", err)
			}
			if took > 5*time.Second {
				t.Errorf("NewSQL on a read-only database took %v to fail, want at once", took)
			}
		})
	}
}

// TestReview56NewSQLLockedCancel: another process (the sqlite3 shell) holds
// the write lock of the database. NewSQL's migration waited in SQLite's
// busy handler, which a cancelled ctx does not interrupt: a ctx cancelled
// after 300 ms took effect only when the busy timeout (10 s) ran out, and
// every retry of the migration could wait the busy timeout again. Once the
// lock is released in time, NewSQL succeeds and the pool's connection has
// its busy timeout back.
func TestReview56NewSQLLockedCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	db, err := audit.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // the migration's connection is the one checked after
	release := lockFromOtherProcess(t, path)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	s, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
	took := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("NewSQL while another process held the lock and ctx ended: nil error")
	}
	if took > 2*time.Second {
		t.Errorf("NewSQL returned %v after its ctx ended at 300ms (%v), want it to end with ctx", took, err)
	}

	go func() {
		time.Sleep(500 * time.Millisecond)
		release()
	}()
	s, err = audit.NewSQL(context.Background(), db, audit.SQLite, nil)
	if err != nil {
		t.Fatalf("NewSQL once the lock was released: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var busy int
	if err := db.QueryRow(`PRAGMA busy_timeout`).Scan(&busy); err != nil {
		t.Fatal(err)
	}
	if busy != 10000 {
		t.Errorf("busy_timeout after NewSQL = %d, want OpenSQLite's 10000", busy)
	}
}

// openFresh opens an empty database of dialect d, closed when t ends.
func openFresh(t *testing.T, d audit.Dialect) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	if d == audit.SQLite {
		db, err = audit.OpenSQLite(filepath.Join(t.TempDir(), "audit.db"))
	} else {
		db, err = sql.Open("pgx", testsvc.StartPostgres(t).DSN)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestReview56ForeignAuditLog: a database that already holds a table
// audit_log of its own (another application's). NewSQL failed with
// "migrate to version 1: SQL logic error: table audit_log already exists",
// which reads as a broken migration of mcpguard's table; it must say the
// table is not mcpguard's.
func TestReview56ForeignAuditLog(t *testing.T) {
	for _, d := range []audit.Dialect{audit.SQLite, audit.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			db := openFresh(t, d)
			if _, err := db.Exec(`CREATE TABLE audit_log (who TEXT, what TEXT)`); err != nil {
				t.Fatal(err)
			}
			s, err := audit.NewSQL(context.Background(), db, d, nil)
			if err == nil {
				s.Close()
				t.Fatal("NewSQL over a foreign audit_log: nil error")
			}
			if !strings.Contains(err.Error(), "not mcpguard's") {
				t.Errorf("NewSQL over a foreign audit_log: %v, want it to say the table is not mcpguard's", err)
			}
			var n int
			if err := db.QueryRow(`SELECT COUNT(*) FROM audit_log`).Scan(&n); err != nil {
				t.Errorf("the foreign table after NewSQL: %v", err)
			}
		})
	}
}

// TestReview56DroppedAuditLog: a database whose audit_log was dropped, its
// audit_schema_version left at the current version. NewSQL succeeded, and
// every event written after it failed in the background (lost, counted at
// Close); it must fail at once, saying what is wrong.
func TestReview56DroppedAuditLog(t *testing.T) {
	for _, d := range []audit.Dialect{audit.SQLite, audit.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			db := openFresh(t, d)
			s, err := audit.NewSQL(context.Background(), db, d, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`DROP TABLE audit_log`); err != nil {
				t.Fatal(err)
			}
			s, err = audit.NewSQL(context.Background(), db, d, nil)
			if err == nil {
				s.Close()
				t.Fatal("NewSQL without audit_log: nil error")
			}
			if !strings.Contains(err.Error(), "no table audit_log") {
				t.Errorf("NewSQL without audit_log: %v, want it to say the table is missing", err)
			}
			if _, err := db.Exec(`DROP TABLE audit_schema_version`); err != nil {
				t.Fatal(err)
			}
			s, err = audit.NewSQL(context.Background(), db, d, nil)
			if err != nil {
				t.Fatalf("NewSQL once audit_schema_version is dropped too: %v", err)
			}
			s.Close()
		})
	}
}
