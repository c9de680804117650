package cliarg

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(path, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile("--keys", path, 5); err != nil || string(data) != "12345" {
		t.Errorf("ReadFile at the bound = %q, %v; want the file", data, err)
	}
	_, err := ReadFile("--keys", path, 4)
	if err == nil || !strings.Contains(err.Error(), "--keys "+path+": the file is over 4 bytes") {
		t.Errorf("ReadFile over the bound: err %v, want one naming the flag, the path and the bound", err)
	}
	if _, err := ReadFile("--keys", path, 1<<20); err != nil {
		t.Errorf("ReadFile under 1 MiB: %v", err)
	}
	if got := size(16 << 20); got != "16 MiB" {
		t.Errorf("size(16 MiB) = %q", got)
	}
	_, err = ReadFile("--keys", filepath.Join(dir, "absent"), 5)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "--keys: ") {
		t.Errorf("ReadFile of an absent file: err %v, want ErrNotExist naming the flag", err)
	}
	_, err = ReadFile("--keys", dir, 5)
	if err == nil || !strings.HasPrefix(err.Error(), "--keys: ") {
		t.Errorf("ReadFile of a directory: err %v, want an error naming the flag", err)
	}
}

// TestReadFileLimitBounds: a limit of math.MaxInt64 read nothing (its
// LimitReader's limit, one more, overflowed), and a negative one is none.
func TestReadFileLimitBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile("--f", path, math.MaxInt64); err != nil || string(data) != "abc" {
		t.Errorf("ReadFile with the largest limit = %q, %v; want the file", data, err)
	}
	if _, err := ReadFile("--f", path, -1); err == nil {
		t.Error("ReadFile of 3 bytes with a negative limit: no error")
	}
}
