package audit_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestSinksRefuseNilEvent checks that every sink refuses a nil *Event with
// ErrInvalidEvent, by Write, WriteDurable and Keep, instead of panicking
// (house rule: no panics on bad input): the sinks dereferenced it before
// checking it.
func TestSinksRefuseNilEvent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	buffered, err := audit.OpenJSONL(filepath.Join(dir, "b.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer buffered.Close()
	durable, err := audit.OpenJSONL(filepath.Join(dir, "d.jsonl"), &audit.JSONLOptions{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer durable.Close()
	db, err := audit.OpenSQLite(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sq, err := audit.NewSQL(ctx, db, audit.SQLite, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	sl := audit.NewSlogSink(slog.DiscardHandler, nil)
	enabled := audit.NewSlogSink(slog.NewJSONHandler(discard{}, nil), nil)
	sinks := map[string]audit.Sink{
		"jsonl": buffered, "jsonl_durable": durable, "sql": sq, "slog_discard": sl, "slog": enabled,
		"fanout": audit.Fanout(buffered, sq, enabled), "fanout_nonkeeper": audit.Fanout(enabled),
	}
	for name, s := range sinks {
		try := func(op string, f func() error) {
			t.Helper()
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: %s(nil) panicked: %v", name, op, p)
				}
			}()
			if err := f(); !errors.Is(err, audit.ErrInvalidEvent) {
				t.Errorf("%s: %s(nil) = %v, want ErrInvalidEvent", name, op, err)
			}
		}
		try("Write", func() error { return s.Write(ctx, nil) })
		try("WriteDurable", func() error { return audit.WriteDurable(ctx, s, nil) })
		if k, ok := s.(audit.Keeper); ok {
			try("Keep", func() error { return k.Keep(ctx, nil, []byte(`{"a":1}`)) })
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
