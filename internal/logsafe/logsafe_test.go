package logsafe

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// panicky panics in the methods its fields name.
type panicky struct{ enabled, handle, attrs, group bool }

func (p panicky) Enabled(context.Context, slog.Level) bool {
	if p.enabled {
		panic("enabled's bug")
	}
	return true
}

func (p panicky) Handle(context.Context, slog.Record) error {
	if p.handle {
		panic("handle's bug\x1b[31m")
	}
	return nil
}

func (p panicky) WithAttrs([]slog.Attr) slog.Handler {
	if p.attrs {
		panic("attrs' bug")
	}
	return p
}

func (p panicky) WithGroup(string) slog.Handler {
	if p.group {
		panic("group's bug")
	}
	return p
}

// TestLoggerContains: each method's panic is contained, said on standard
// error (the panic's text escaped), and the logger goes on; a logger made
// by Logger is not wrapped again; nil stays nil.
func TestLoggerContains(t *testing.T) {
	var buf bytes.Buffer
	old := stderr
	stderr = &buf
	t.Cleanup(func() { stderr = old })
	for name, h := range map[string]panicky{
		"Enabled": {enabled: true}, "Handle": {handle: true}, "WithAttrs": {attrs: true}, "WithGroup": {group: true},
	} {
		buf.Reset()
		l := Logger(slog.New(h))
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("%s: the panic escaped: %v", name, v)
				}
			}()
			l.With("k", "v").WithGroup("g").Info("the message")
		}()
		if !strings.Contains(buf.String(), "panicked in "+name) {
			t.Errorf("%s: standard error says %q", name, buf.String())
		}
		if strings.Contains(buf.String(), "\x1b") {
			t.Errorf("%s: a control character reached standard error: %q", name, buf.String())
		}
	}
	l := Logger(slog.New(panicky{}))
	if Logger(l) != l {
		t.Error("a logger Logger made was wrapped again")
	}
	if Logger(nil) != nil {
		t.Error("Logger(nil) is not nil")
	}
}
