//go:build linux

package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestReview57AuditCloseFailureIsReported: the audit sink buffers the
// outcome records and writes the last of them when the server closes it at
// the end. When that write fails (here /dev/full, as a full disk), those
// records are lost: the server must say so and exit 1. It ignored Close's
// error, and exited 0 with nothing on stderr, the calls it served without
// their records.
func TestReview57AuditCloseFailureIsReported(t *testing.T) {
	lines := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}}}`,
	}, "\n") + "\n"
	cmd, stderr := command([]string{"-audit", "/dev/full"}, alice)
	cmd.Stdin = strings.NewReader(lines)
	out, err := cmd.Output()
	if n := strings.Count(string(out), "\n"); n != 2 || !strings.Contains(string(out), `"found":true`) {
		t.Errorf("stdout %q, want the answers to initialize and the call", out)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want status 1: the call's audit record was lost; stderr:\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), "audit file") || !strings.Contains(stderr.String(), "no space left on device") {
		t.Errorf("stderr does not say the audit records were lost:\n%s", stderr)
	}
}
