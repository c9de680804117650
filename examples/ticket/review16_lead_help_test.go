package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpExitsZero: -h, to the program or to a command, is answered
// with the usage and status 0 (refund, shop and gateway do the same); the
// usage names every environment variable the server reads.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"serve-http", "-h"}, {"demo", "-help"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 0 {
			t.Errorf("ticket %v: status %d, want 0; stderr:\n%s", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	run(context.Background(), []string{"-h"}, &out, &errb)
	for _, env := range []string{tokenEnv, auditKeyEnv} {
		if !strings.Contains(errb.String(), env) {
			t.Errorf("the usage does not name %s:\n%s", env, errb.String())
		}
	}
	if code := run(context.Background(), []string{"-no-such-flag"}, &out, &errb); code != 2 {
		t.Errorf("an unknown flag: status %d, want 2", code)
	}
}
