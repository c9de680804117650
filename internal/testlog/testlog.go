// Package testlog captures logs in tests.
package testlog

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// Buffer is a bytes.Buffer safe for concurrent use: a log's destination
// in a test that reads it while other goroutines log.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// CaptureDefault sends slog.Default's records, as text, to a new Buffer
// until t ends, when the previous default comes back. t must not run in
// parallel with other tests: the default is the process's.
func CaptureDefault(t testing.TB) *Buffer {
	t.Helper()
	buf := &Buffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return buf
}
