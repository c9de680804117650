//go:build unix

package hangup

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReview30OpenRegular: a regular file opens and reads; a named pipe no
// process writes to, a directory and a device are refused at once, as
// *fs.PathError naming the type; a missing file is the open's error.
func TestReview30OpenRegular(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("rules"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenRegular(reg)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(data) != "rules" {
		t.Fatalf("read %q, %v", data, err)
	}

	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(pipe, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{pipe, link, dir, "/dev/null"} {
		done := make(chan error, 1)
		go func() {
			f, err := OpenRegular(p)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != p || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want a *fs.PathError saying it is not a regular file", p, err)
			}
		case <-time.After(5 * time.Second):
			if w, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			t.Fatalf("%s: the open waited", p)
		}
	}
	if _, err := OpenRegular(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}
