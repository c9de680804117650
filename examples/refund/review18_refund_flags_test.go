package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestReview18FlagValueErrors: a flag value that can never work is a usage
// error, as a flag that does not parse is: exit 2 at once, with one line
// naming the flag, and nothing on stdout. Before, -session-cap NaN,
// -cap-window 1ns or a non-loopback -http exited 1 after the server had
// started its stdio transport, with the limiter's words ("limit 0 (spend
// NaN/1h0m0s per session ...") that name no flag.
func TestReview18FlagValueErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		flag string
	}{
		{"session_cap_zero", []string{"-session-cap", "0"}, "-session-cap"},
		{"session_cap_negative", []string{"-session-cap", "-5"}, "-session-cap"},
		{"session_cap_nan", []string{"-session-cap", "NaN"}, "-session-cap"},
		{"session_cap_inf", []string{"-session-cap", "+Inf"}, "-session-cap"},
		{"session_cap_below_a_cent", []string{"-session-cap", "0.001"}, "-session-cap"},
		{"user_cap_nan", []string{"-user-cap", "nan"}, "-user-cap"},
		{"user_cap_negative", []string{"-user-cap", "-1"}, "-user-cap"},
		{"user_cap_below_a_cent", []string{"-user-cap", "0.009"}, "-user-cap"},
		{"window_zero", []string{"-cap-window", "0s"}, "-cap-window"},
		{"window_negative", []string{"-cap-window", "-1h"}, "-cap-window"},
		{"window_1ns", []string{"-cap-window", "1ns"}, "-cap-window"},
		{"window_too_long", []string{"-cap-window", "500000h"}, "-cap-window"},
		{"http_not_loopback", []string{"-http", "0.0.0.0:0"}, "-http"},
		{"http_no_port", []string{"-http", "127.0.0.1"}, "-http"},
		{"http_bad_port", []string{"-http", "127.0.0.1:99999"}, "-http"},
		// Meant for -http: without it the server would serve stdio.
		{"allow_remote_without_http", []string{"-allow-remote"}, "-allow-remote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, stderr := command(tc.args)
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			cmd.Stdin = strings.NewReader("")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("refund %q kept running", tc.args)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("refund %q: %v, want exit 2; stderr:\n%s", tc.args, err, stderr)
			}
			got := strings.TrimSpace(stderr.String())
			if !strings.HasPrefix(got, "refund: "+tc.flag+" ") || strings.Contains(got, "\n") {
				t.Errorf("refund %q: stderr %q, want one line naming %s", tc.args, got, tc.flag)
			}
			if stdout.Len() != 0 {
				t.Errorf("refund %q wrote %q to stdout", tc.args, stdout.String())
			}
		})
	}
}
