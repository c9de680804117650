package cliarg

import (
	"errors"
	"io/fs"
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
