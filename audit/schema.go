package audit

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// schemaV1 creates audit_log version 1. The column time is derived from
// time_ns for people reading the table; queries use time_ns.
func schemaV1(d Dialect) []string {
	if d == Postgres {
		return []string{
			`CREATE TABLE audit_log (
	id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	time_ns BIGINT NOT NULL,
	correlation_id TEXT NOT NULL,
	session_id TEXT NOT NULL DEFAULT '',
	subject TEXT NOT NULL DEFAULT '',
	roles TEXT NOT NULL DEFAULT '',
	tool TEXT NOT NULL DEFAULT '',
	class TEXT NOT NULL DEFAULT '',
	phase TEXT NOT NULL,
	allowed BOOLEAN NOT NULL,
	dry_run BOOLEAN NOT NULL,
	code TEXT NOT NULL DEFAULT '',
	detail TEXT NOT NULL DEFAULT '',
	latency_ms DOUBLE PRECISION NOT NULL,
	args_sha256 TEXT NOT NULL DEFAULT '',
	cost DOUBLE PRECISION NOT NULL DEFAULT 0,
	protocol_version TEXT NOT NULL DEFAULT '',
	client_name TEXT NOT NULL DEFAULT '',
	args TEXT,
	time TIMESTAMPTZ GENERATED ALWAYS AS (to_timestamp((time_ns / 1000)::double precision / 1000000)) STORED
)`,
			`CREATE INDEX audit_log_session ON audit_log (session_id, time_ns)`,
			`CREATE INDEX audit_log_subject ON audit_log (subject, time_ns)`,
			`CREATE INDEX audit_log_tool ON audit_log (tool, time_ns)`,
			`CREATE INDEX audit_log_time ON audit_log (time_ns)`,
			`CREATE INDEX audit_log_correlation ON audit_log (correlation_id)`,
		}
	}
	return []string{
		`CREATE TABLE audit_log (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	time_ns INTEGER NOT NULL,
	correlation_id TEXT NOT NULL,
	session_id TEXT NOT NULL DEFAULT '',
	subject TEXT NOT NULL DEFAULT '',
	roles TEXT NOT NULL DEFAULT '',
	tool TEXT NOT NULL DEFAULT '',
	class TEXT NOT NULL DEFAULT '',
	phase TEXT NOT NULL,
	allowed INTEGER NOT NULL,
	dry_run INTEGER NOT NULL,
	code TEXT NOT NULL DEFAULT '',
	detail TEXT NOT NULL DEFAULT '',
	latency_ms REAL NOT NULL,
	args_sha256 TEXT NOT NULL DEFAULT '',
	cost REAL NOT NULL DEFAULT 0,
	protocol_version TEXT NOT NULL DEFAULT '',
	client_name TEXT NOT NULL DEFAULT '',
	args TEXT,
	time TEXT GENERATED ALWAYS AS (strftime('%Y-%m-%dT%H:%M:%fZ', time_ns / 1000000 / 1000.0, 'unixepoch')) VIRTUAL
)`,
		`CREATE INDEX audit_log_session ON audit_log (session_id, time_ns)`,
		`CREATE INDEX audit_log_subject ON audit_log (subject, time_ns)`,
		`CREATE INDEX audit_log_tool ON audit_log (tool, time_ns)`,
		`CREATE INDEX audit_log_time ON audit_log (time_ns)`,
		`CREATE INDEX audit_log_correlation ON audit_log (correlation_id)`,
	}
}

// schemaV2 upgrades audit_log from version 1 to 2. On SQLite the column
// time, generated from time_ns, becomes a column the sink writes with the
// same text: computing a generated column costs every inserted row a
// strftime call, and makes every multi-row INSERT keep a statement journal
// (a copy of each page it changes). Rows already there get their value from
// the former expression (this rewrites the table once). Nothing changes on
// PostgreSQL.
func schemaV2(d Dialect) []string {
	if d == Postgres {
		return nil
	}
	return []string{
		`ALTER TABLE audit_log DROP COLUMN time`,
		`ALTER TABLE audit_log ADD COLUMN time TEXT NOT NULL DEFAULT ''`,
		`UPDATE audit_log SET time = strftime('%Y-%m-%dT%H:%M:%fZ', time_ns / 1000000 / 1000.0, 'unixepoch')`,
	}
}

// indexPrefix is how many characters of session_id, subject, tool and
// correlation_id the PostgreSQL indexes of schema version 3 hold (at most
// four bytes each: 1 KiB, well under the 2704 bytes of a B-tree entry).
const indexPrefix = 256

// schemaV3 upgrades audit_log from version 2 to 3. On PostgreSQL the
// indexes of the text columns a [Filter] selects by hold the first
// indexPrefix characters of the value instead of all of it: a B-tree entry
// is at most 2704 bytes, and PostgreSQL refused a row whose value was
// longer (a 3 kB tool name or session id sent by a client), so its event
// was lost. Queries compare the prefix (through the index) and the whole
// value. Nothing changes on SQLite, whose index entries have no such bound.
func schemaV3(d Dialect) []string {
	if d != Postgres {
		return nil
	}
	var qs []string
	for _, ix := range []struct{ name, col, tail string }{
		{"audit_log_session", "session_id", ", time_ns"},
		{"audit_log_subject", "subject", ", time_ns"},
		{"audit_log_tool", "tool", ", time_ns"},
		{"audit_log_correlation", "correlation_id", ""},
	} {
		qs = append(qs, `DROP INDEX `+ix.name,
			`CREATE INDEX `+ix.name+` ON audit_log (left(`+ix.col+`, `+strconv.Itoa(indexPrefix)+`)`+ix.tail+`)`)
	}
	return qs
}

// schemaV4 upgrades audit_log from version 3 to 4: the column request_id
// ([Event].RequestID), empty in the rows already there. Adding a column with
// a constant default rewrites no row on SQLite, nor on PostgreSQL 11 or
// later; PostgreSQL 10 rewrites the table and its indexes (see the package
// doc).
func schemaV4(Dialect) []string {
	return []string{`ALTER TABLE audit_log ADD COLUMN request_id TEXT NOT NULL DEFAULT ''`}
}

// schemaV5 upgrades audit_log from version 4 to 5: an index on request_id,
// for the rows that have one. [Filter].RequestID joins a gateway's record
// of a call to the downstream's, which without it read the whole table.
// The index is partial: a row without a request id (every row of a server
// with no proxy in front) costs an insert nothing more. On PostgreSQL it
// holds the first indexPrefix characters, as version 3's indexes do: an
// [Event].RequestID is the caller's to set.
func schemaV5(d Dialect) []string {
	if d == Postgres {
		return []string{`CREATE INDEX audit_log_request ON audit_log (left(request_id, ` + strconv.Itoa(indexPrefix) + `)) WHERE request_id <> ''`}
	}
	return []string{`CREATE INDEX audit_log_request ON audit_log (request_id) WHERE request_id <> ''`}
}

// schemaV6 upgrades audit_log from version 5 to 6: the column parent_id
// ([Event].ParentID), empty in the rows already there (adding a column with
// a constant default rewrites no row, but on PostgreSQL 10: see schemaV4),
// and an index on it for the rows that have one, partial as version 5's on
// request_id is: a call made by no other call's handler (every call a
// client sends) costs an insert nothing more. [Filter].ParentID finds the
// calls an outer call made through it. On PostgreSQL the index holds the
// first indexPrefix characters, as version 3's indexes do.
func schemaV6(d Dialect) []string {
	qs := []string{`ALTER TABLE audit_log ADD COLUMN parent_id TEXT NOT NULL DEFAULT ''`}
	if d == Postgres {
		return append(qs, `CREATE INDEX audit_log_parent ON audit_log (left(parent_id, `+strconv.Itoa(indexPrefix)+`)) WHERE parent_id <> ''`)
	}
	return append(qs, `CREATE INDEX audit_log_parent ON audit_log (parent_id) WHERE parent_id <> ''`)
}

// migration returns the statements that upgrade audit_log to version to
// from the version before (version 0: no table).
func migration(to int, d Dialect) []string {
	switch to {
	case 1:
		return schemaV1(d)
	case 2:
		return schemaV2(d)
	case 3:
		return schemaV3(d)
	case 4:
		return schemaV4(d)
	case 5:
		return schemaV5(d)
	case 6:
		return schemaV6(d)
	}
	return nil
}

// migrationLockKey is the PostgreSQL advisory lock that serializes schema
// migrations of the audit tables ("mcpga" in ASCII).
const migrationLockKey = "469908990817"

// migrate creates or upgrades the schema to SchemaVersion in one
// transaction. A database busy with another connection's or process's
// write lock, or a concurrent opener's migration (on SQLite opened without
// OpenSQLite's immediate transactions, a deferred transaction cannot take
// the write lock it needs) is retried for 30 s, or until ctx ends. On
// SQLite the migration's connection waits here rather than in its busy
// handler (its busy timeout is 0 meanwhile): a cancelled ctx does not cut
// that wait short, and each try could wait the busy timeout again. A
// read-only SQLite database is refused at once: the sink could write
// nothing to it.
func migrate(ctx context.Context, db *sql.DB, d Dialect) error {
	var on txBeginner = db // PostgreSQL: each try on a connection that works
	if d == SQLite {
		conn, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("audit: migrate: %w", err)
		}
		defer conn.Close()
		var busy int64
		if err := conn.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
			return fmt.Errorf("audit: migrate: %w", err)
		}
		if busy > 0 {
			// Restored even when the Exec below fails: the driver reports
			// a ctx that ended as the pragma ran as its error, the pragma
			// applied all the same.
			defer func() {
				q := `PRAGMA busy_timeout = ` + strconv.FormatInt(busy, 10)
				if _, err := conn.ExecContext(context.Background(), q); err != nil {
					// Not back in the pool without its busy timeout.
					conn.Raw(func(any) error { return driver.ErrBadConn })
				}
			}()
			if _, err := conn.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err != nil {
				return fmt.Errorf("audit: migrate: %w", err)
			}
		}
		on = conn
	}
	wait, maxWait := 10*time.Millisecond, 500*time.Millisecond
	if d == SQLite {
		maxWait = 100 * time.Millisecond // as often as SQLite's busy handler, nearly
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		err := migrateOnce(ctx, on, d)
		if err == nil || !transientErr(d, err) || sqliteReadOnly(d, err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}

// sqliteReadOnly reports whether err is SQLite's SQLITE_READONLY (any
// extended code): the database, or its file, takes no writes.
func sqliteReadOnly(d Dialect, err error) bool {
	var coded interface{ Code() int }
	return d == SQLite && errors.As(err, &coded) && coded.Code()&0xff == 8
}

// txBeginner is a *sql.DB or a *sql.Conn.
type txBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

func migrateOnce(ctx context.Context, on txBeginner, d Dialect) error {
	tx, err := on.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("audit: migrate: %w", err)
	}
	defer tx.Rollback()
	if d == Postgres {
		// Serialize concurrent migrations, the creation of the version table
		// included: two CREATE TABLE IF NOT EXISTS racing in PostgreSQL can
		// fail on the catalog's unique index. (SQLite transactions here are
		// BEGIN IMMEDIATE, which serializes them already.)
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(`+migrationLockKey+`)`); err != nil {
			return fmt.Errorf("audit: migrate: %w", err)
		}
	}
	create := `CREATE TABLE IF NOT EXISTS audit_schema_version (version INTEGER NOT NULL)`
	if d == Postgres {
		// The version table where the sink's statements find it, by
		// search_path: IF NOT EXISTS looks in the first schema only, and
		// a trail made in public before a schema named after the role
		// existed would get a second, empty one there, and with it a
		// second audit_log (its records out of every query, unsaid). Not
		// created when found, a role without CREATE on the schema opens
		// an existing trail too.
		var found bool
		if err := tx.QueryRowContext(ctx, `SELECT to_regclass('audit_schema_version') IS NOT NULL`).Scan(&found); err != nil {
			return fmt.Errorf("audit: migrate: %w", err)
		}
		if found {
			create = ""
		}
	}
	if create != "" {
		if _, err := tx.ExecContext(ctx, create); err != nil {
			if sqliteReadOnly(d, err) {
				return fmt.Errorf("audit: the SQLite database is read-only: %w", err)
			}
			return fmt.Errorf("audit: create schema table: %w", err)
		}
	}
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM audit_schema_version`).Scan(&v); err != nil {
		return fmt.Errorf("audit: migrate: read version: %w", err)
	}
	if d == SQLite {
		// A write that changes nothing: a database that takes no writes
		// (opened read-only, a read-only file or mount) fails it here,
		// not in the writer after NewSQL returned.
		if _, err := tx.ExecContext(ctx, `UPDATE audit_schema_version SET version = version WHERE 0`); err != nil {
			if sqliteReadOnly(d, err) {
				return fmt.Errorf("audit: the SQLite database is read-only: %w", err)
			}
			return fmt.Errorf("audit: migrate: %w", err)
		}
	}
	switch {
	case v == SchemaVersion:
		// The table the version is of, where the sink's statements find
		// it (PostgreSQL: by search_path): without it (dropped) every
		// write would fail after NewSQL returned.
		q := `SELECT COUNT(*) FROM sqlite_master WHERE name = 'audit_log' AND type = 'table'`
		if d == Postgres {
			q = `SELECT COUNT(*) FROM (SELECT to_regclass('audit_log') AS t) r WHERE t IS NOT NULL`
		}
		var n int
		if err := tx.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return fmt.Errorf("audit: migrate: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("audit: audit_schema_version records version %d, but the database has no table "+
				"audit_log (dropped?): drop audit_schema_version too, for NewSQL to create both again", v)
		}
		return nil
	case v > SchemaVersion:
		return fmt.Errorf("audit: audit_log schema version %d is newer than this library's %d", v, SchemaVersion)
	case v == 0:
		q := `SELECT COUNT(*) FROM sqlite_master WHERE name = 'audit_log' AND type IN ('table', 'view')`
		if d == Postgres {
			// Where CREATE TABLE puts it: the first schema of search_path.
			q = `SELECT COUNT(*) FROM (SELECT to_regclass(quote_ident(current_schema()) || '.audit_log') AS t) r WHERE t IS NOT NULL`
		}
		var n int
		if err := tx.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return fmt.Errorf("audit: migrate: %w", err)
		}
		if n > 0 {
			return errors.New("audit: the database has a table audit_log that is not mcpguard's " +
				"(audit_schema_version does not record it): rename or drop it, or use another database")
		}
	}
	for to := v + 1; to <= SchemaVersion; to++ {
		for _, q := range migration(to, d) {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("audit: migrate to version %d: %w", to, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_schema_version (version) VALUES (`+strconv.Itoa(SchemaVersion)+`)`); err != nil {
		return fmt.Errorf("audit: migrate: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("audit: migrate: %w", err)
	}
	return nil
}
