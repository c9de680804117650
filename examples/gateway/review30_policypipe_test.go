//go:build unix

package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/gateway"
)

// TestReview30PolicyReloadPipeSwappedIn: --policy is a symlink that a
// deploy tool points, atomically, now at a regular file and now at a
// named pipe no process writes to. A reload that found a regular file
// (os.Stat) and then opened the pipe waited for a writer for ever: the
// SIGHUP handler with it, every later SIGHUP, and the shutdown, which
// waits for the handler. The reload must answer at once, whatever the
// path names when it is opened.
func TestReview30PolicyReloadPipeSwappedIn(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg.json")
	if err := os.WriteFile(reg, []byte(`{"tools":[{"name":"get_customer_record","class":"read"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "policy.json")
	if err := os.Symlink(reg, path); err != nil {
		t.Fatal(err)
	}
	first, _, err := loadPolicy(reg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New("http://127.0.0.1:1/mcp", gateway.DemoTokens(), &gateway.Options{Policy: first})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tmp := filepath.Join(dir, "tmp")
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			target := reg
			if i%2 == 1 {
				target = pipe
			}
			os.Remove(tmp)
			if os.Symlink(target, tmp) == nil {
				os.Rename(tmp, path)
			}
		}
	})
	defer func() {
		close(quit)
		wg.Wait()
	}()

	reloads := 0
	for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); reloads++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			reloadPolicy(logger, path, g)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			// Unblock the stuck open so that the test can end.
			if f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Fatalf("reload %d hung: it opened the named pipe", reloads)
		}
	}
	if reloads == 0 {
		t.Fatal("no reload ran")
	}
	if _, ok := g.Policy().Resolve("get_customer_record"); !ok {
		t.Fatal("the policy was lost")
	}
}
