package main

import (
	"io"
	"strings"
	"testing"
)

// TestReview31AuditPostgresRefusesURLPassword: --redis refuses a password
// in its URL (the command line is readable by every user of the host) and
// names the variable to put it in; --audit-postgres took one (user:pw@ or
// ?password=) and used it. It now refuses it too, naming PGPASSWORD and
// ~/.pgpass, without showing it, before anything is dialled.
func TestReview31AuditPostgresRefusesURLPassword(t *testing.T) {
	for _, v := range []string{
		"postgres://u:s3cretpw@127.0.0.1:1/db?sslmode=disable",
		"postgresql://u@127.0.0.1:1/db?password=s3cretpw&sslmode=disable",
		"postgres://127.0.0.1:1/db?sslmode=disable&PASSWORD=s3cretpw",
		"postgres://u:@127.0.0.1:1/db?sslmode=disable",
	} {
		var stderr strings.Builder
		code := run(t.Context(), []string{"serve-http", "--port", "0", "--audit-dir", t.TempDir(), "--audit-postgres", v}, io.Discard, &stderr)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2 (a usage error); stderr:\n%s", v, code, stderr.String())
		}
		if strings.Contains(stderr.String(), "s3cretpw") {
			t.Errorf("%s: the password is shown:\n%s", v, stderr.String())
		}
		if !strings.Contains(stderr.String(), "PGPASSWORD") {
			t.Errorf("%s: the refusal does not name PGPASSWORD:\n%s", v, stderr.String())
		}
	}
}
