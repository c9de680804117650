package cliarg

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview56ReadFileHidesSecretGivenAsPath: a key file's contents, a
// token or a JWT put where a file flag's path belongs (--upstream-key
// "$(cat key.pem)") were echoed by ReadFile's errors (os.Open's "open
// <path>: no such file or directory"), control characters and all, into
// the terminal and the logs of the binary that refuses them.
func TestReview56ReadFileHidesSecretGivenAsPath(t *testing.T) {
	for _, tc := range []struct{ name, path, secret string }{
		{"pem", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"},
		{"pem_one_line", "-----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"},
		{"token", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a"},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", "eyJhbGciOiJIUzI1NiJ9"},
		{"user_password", "admin:hunter2", "hunter2"},
		{"escape_sequence", "keys\x1b[2J.json", "\x1b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFile("--upstream-key", tc.path, 1<<20)
			if err == nil {
				t.Fatalf("ReadFile(%q) = nil error, want one", tc.path)
			}
			if strings.Contains(err.Error(), tc.secret) || !strings.HasPrefix(err.Error(), "--upstream-key: ") {
				t.Errorf("ReadFile(%q): err %q, want one naming the flag without %q", tc.path, err, tc.secret)
			}
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("ReadFile(%q): err %v, want ErrNotExist", tc.path, err)
			}
		})
	}
}

// TestReview56ReadFileShowsPlainPaths: a path, even with a name that
// looks like a key in a directory, is shown as it is; one with a
// character that does not print, quoted.
func TestReview56ReadFileShowsPlainPaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "TestKeys2718281828abc")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, shown string }{
		{filepath.Join(dir, "absent.pem"), filepath.Join(dir, "absent.pem")},
		{"keys.json", "keys.json"},
		{filepath.Join(dir, "a\u202eb"), `"` + dir + `/a\u202eb"`},
	} {
		_, err := ReadFile("--keys", tc.path, 5)
		if want := "--keys: open " + tc.shown + ": "; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ReadFile(%q): err %v, want it to begin %q", tc.path, err, want)
		}
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte("123456"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile("--keys", big, 5)
	if want := "--keys " + big + ": the file is over 5 bytes"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("ReadFile over the bound: err %v, want it to begin %q", err, want)
	}
}
