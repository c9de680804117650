package main

import (
	"strings"
	"testing"
)

// TestReview31HostNotShown: a --host refused as not loopback (a URL with
// its password given by mistake) was printed whole in the usage error.
func TestReview31HostNotShown(t *testing.T) {
	code, _, errOut := runCLI(t, "serve-http", "--host", "admin:S3cretPass@db")
	if code != 2 {
		t.Errorf("exit %d, want 2: %s", code, errOut)
	}
	if strings.Contains(errOut, "S3cretPass") {
		t.Errorf("the password is shown: %s", errOut)
	}
}
