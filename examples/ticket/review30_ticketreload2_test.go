//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestReview30b_ReloadPipeSwappedInNoHang: --config is a symlink that a
// deploy tool (or an attacker with the directory) points, atomically,
// now at a regular file and now at a named pipe no process writes to. A
// reload that found a regular file and then opened the pipe waited for a
// writer for ever: the SIGHUP handler with it, every later SIGHUP, and
// the shutdown, which waits for the handler. The reload must answer at
// once, whatever the path names when it is opened.
func TestReview30b_ReloadPipeSwappedInNoHang(t *testing.T) {
	ta := newTestApp(t, nil)
	dir := t.TempDir()
	data, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := filepath.Join(dir, "reg.yaml")
	if err := os.WriteFile(reg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "server.yaml")
	if err := os.Symlink(reg, path); err != nil {
		t.Fatal(err)
	}
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

	var piped, regular int
	for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); {
		done := make(chan error, 1)
		go func() {
			_, _, err := ta.reload(path)
			done <- err
		}()
		select {
		case err := <-done:
			switch {
			case err == nil:
				regular++
			case strings.Contains(err.Error(), "not a regular file"):
				piped++
			default:
				t.Fatalf("reload: %v", err)
			}
		case <-time.After(2 * time.Second):
			// Let the reload go: a writer opens the pipe and closes it.
			if w, err := os.OpenFile(pipe, os.O_RDWR, 0); err == nil {
				w.Close()
			}
			<-done
			t.Fatalf("a reload hung opening the named pipe put in place of a regular file (after %d reloads of the file, %d refusals of the pipe)", regular, piped)
		}
	}
	t.Logf("%d reloads of the file, %d refusals of the pipe", regular, piped)
}
