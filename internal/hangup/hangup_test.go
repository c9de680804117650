//go:build unix

package hangup_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/hangup"
)

type counter struct {
	mu  sync.Mutex
	n   int
	err error
}

func (c *counter) Reopen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.err
}

func (c *counter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestReopenOnSIGHUP(t *testing.T) {
	var logs syncBuf
	c := &counter{err: errors.New("disk gone")}
	stop := hangup.Reopen(slog.New(slog.NewTextHandler(&logs, nil)), "/var/log/a.jsonl", c)
	defer stop()
	for want := 1; want <= 2; want++ {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for c.count() < want {
			if time.Now().After(deadline) {
				t.Fatalf("SIGHUP %d: Reopen called %d times", want, c.count())
			}
			time.Sleep(time.Millisecond)
		}
	}
	for !strings.Contains(logs.String(), "disk gone") {
		time.Sleep(time.Millisecond)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "audit=/var/log/a.jsonl") {
		t.Errorf("a failed reopen logged %q, want an ERROR naming the file and the error", logs.String())
	}
	stop()
	stop() // twice is harmless
	// After stop, a SIGHUP must not reach Reopen. Keep the process alive
	// through it with a second registration, as the binary would not.
	keep := make(chan os.Signal, 1)
	signal.Notify(keep, syscall.SIGHUP)
	defer signal.Stop(keep)
	n := c.count()
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	select {
	case <-keep:
	case <-time.After(5 * time.Second):
		t.Fatal("SIGHUP not delivered")
	}
	time.Sleep(20 * time.Millisecond)
	if c.count() != n {
		t.Errorf("Reopen called after stop")
	}
}
