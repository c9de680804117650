package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	var out strings.Builder
	if err := run(filepath.Join(t.TempDir(), "audit.db"), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"bob (support) sees: get_customer_record, trigger_refund",
		"UNAUTHENTICATED",
		`unknown tool "admin_reset_key"`,
		`unknown argument "admin"`,
		"WRITE_NOT_ALLOWED",
		`"dry_run":true`,
		"the user did not confirm",
		`"status":"refunded"`,
		"SPEND_LIMIT_EXCEEDED",
		"refund handler ran 1 time(s)",
		"intent  ALLOW ada@example.com  trigger_refund",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("demo output lacks %q\n%s", want, got)
		}
	}
}
