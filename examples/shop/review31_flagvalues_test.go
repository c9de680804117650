package main

import (
	"strings"
	"testing"
)

// TestReview31TransportNotShown: a --transport refused (a URL with its
// password given by mistake) was printed whole in the usage error.
func TestReview31TransportNotShown(t *testing.T) {
	var out strings.Builder
	if code := run([]string{"--gateway", "http://127.0.0.1:1", "--transport", "http://admin:S3cretPass@x"}, &out, &out); code != 2 {
		t.Errorf("exit %d, want 2: %s", code, out.String())
	}
	if strings.Contains(out.String(), "S3cretPass") {
		t.Errorf("the password is shown: %s", out.String())
	}
}
