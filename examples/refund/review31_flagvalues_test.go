package main

import (
	"strings"
	"testing"
)

// TestReview31HTTPAddrNotShown: an -http value refused (a URL with its
// password given by mistake) was printed whole in the usage error.
func TestReview31HTTPAddrNotShown(t *testing.T) {
	for _, v := range []string{"admin:S3cretPass@db:5432", "http://admin:S3cretPass@10.0.0.1:80", "10.0.0.1:S3cretPass"} {
		var stderr strings.Builder
		if code := run([]string{"-http", v}, &stderr); code != 2 {
			t.Errorf("-http %s: exit %d, want 2; stderr %q", v, code, stderr.String())
		}
		if strings.Contains(stderr.String(), "S3cretPass") {
			t.Errorf("-http %s: the password is shown: %q", v, stderr.String())
		}
	}
}
