package audit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// An empty path is refused as such: it used to be taken as the working
// directory ("open /cwd: is a directory"), naming a path nobody gave.
func TestReview17OpenJSONLEmptyPath(t *testing.T) {
	s, err := audit.OpenJSONL("", nil)
	if err == nil {
		s.Close()
		t.Fatal("OpenJSONL(\"\") succeeded")
	}
	if !strings.Contains(err.Error(), "empty") {
		t.Errorf("error %q does not say the path is empty", err)
	}
}

// An open that fails names the path once.
func TestReview17OpenJSONLErrorNamesPathOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "missing", "audit.jsonl")
	_, err := audit.OpenJSONL(path, nil)
	if err == nil {
		t.Fatal("OpenJSONL in a missing directory succeeded")
	}
	if n := strings.Count(err.Error(), path); n != 1 {
		t.Errorf("error %q names the path %d times", err, n)
	}
	if !os.IsNotExist(err) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("error %q lost its cause", err)
	}
}
