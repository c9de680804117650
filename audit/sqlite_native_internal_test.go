package audit

import (
	"context"
	"database/sql/driver"
	"path/filepath"
	"testing"
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
