package audit

import (
	"context"
	"database/sql/driver"
	"path/filepath"
	"testing"
	"time"
)

type notSQLiteConn struct {
	db  uintptr
	tls uintptr
}

// TestSQLiteNativeHandle: the handle is read from modernc.org/sqlite's own
// connections only.
func TestSQLiteNativeHandle(t *testing.T) {
	tests := []struct {
		name string
		dc   any
	}{
		{"nil", nil},
		{"nil_pointer", (*notSQLiteConn)(nil)},
		{"other_struct", &notSQLiteConn{db: 1, tls: 1}},
		{"not_a_pointer", notSQLiteConn{db: 1}},
		{"interface_value", driver.Conn(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if db, tls, ok := sqliteNative(tt.dc); ok || db != 0 || tls != nil {
				t.Errorf("sqliteNative(%T) = %d, %v, %v; want 0, nil, false", tt.dc, db, tls, ok)
			}
		})
	}
	t.Run("modernc_conn", func(t *testing.T) {
		db, err := OpenSQLite(filepath.Join(t.TempDir(), "a.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := conn.Raw(func(dc any) error {
			if h, tls, ok := sqliteNative(dc); !ok || h == 0 || tls == nil {
				t.Errorf("sqliteNative(%T) = %d, %v, %v; want a handle", dc, h, tls, ok)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSQLiteWriterReleasesFlood: after committing, the writer's batch
// holds no row's strings, and once a transaction of at most one round
// follows, not the memory a flood's transactions grew to.
func TestSQLiteWriterReleasesFlood(t *testing.T) {
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := NewSQL(context.Background(), db, SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := toRow(&Event{Time: time.Unix(1, 0), CorrelationID: "c", Tool: "t", Phase: PhaseOutcome, Allowed: true}, SQLite)
	if err != nil {
		t.Fatal(err)
	}
	b := writerBatch{rows: make([]row, 0, 8*s.round)}
	b.rows = append(b.rows, r, r, r)
	big := b.rows[:3:3]
	s.commitBatch(&b, nil, false, true, nil)
	if len(b.rows) != 0 {
		t.Fatalf("after a commit the batch holds %d rows, want 0", len(b.rows))
	}
	for i, r := range big {
		if r.corr != "" || r.tool != "" {
			t.Errorf("row %d of the committed batch still holds its strings: %+v", i, r)
		}
	}
	if got := cap(b.rows); got > s.round {
		t.Errorf("after a small transaction the batch keeps capacity %d, want at most one round (%d)", got, s.round)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().Rows; n != 3 {
		t.Errorf("rows committed = %d, want 3", n)
	}
}
