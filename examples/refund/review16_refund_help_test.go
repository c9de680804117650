package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestReview16HelpExitsZero: -h and --help print the usage, which says how
// the caller is identified (the two environment variables, which no flag
// names), and exit 0 as Go commands do; stdout stays empty.
func TestReview16HelpExitsZero(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		t.Run(strings.TrimLeft(arg, "-"), func(t *testing.T) {
			cmd, stderr := command([]string{arg})
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			err := cmd.Run()
			if err != nil {
				t.Errorf("refund %s: %v, want exit 0; stderr:\n%s", arg, err, stderr)
			}
			for _, want := range []string{"Usage", tokenEnv, tokensEnv, "-http", "-audit"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("refund %s: usage does not mention %q:\n%s", arg, want, stderr)
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("refund %s wrote %q to stdout", arg, stdout.String())
			}
		})
	}
	cmd, _ := command([]string{"-no-such-flag"})
	var ee *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("refund -no-such-flag: %v, want exit 2", err)
	}
}

// TestReview16UnknownTokenWarnedAtStart: the token is resolved once, at
// start, so a token that is not in the table (a typo, a token of another
// table) is as sure to refuse every call as an unset one, and is logged at
// start the same way, without quoting it.
func TestReview16UnknownTokenWarnedAtStart(t *testing.T) {
	for _, env := range []string{"", "REFUND_MCP_TOKEN=demo-token-alic"} {
		cmd, stderr := command(nil, env)
		cmd.Stdin = strings.NewReader("")
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("the server did not end at end of input")
		}
		log := stderr.String()
		if !strings.Contains(log, "every call will be refused as unauthenticated") {
			t.Errorf("start with %q: no warning that every call will be refused:\n%s", env, log)
		}
		if strings.Contains(log, "demo-token-alic\"") || strings.Contains(log, "demo-token-alic ") {
			t.Errorf("start with %q: the log quotes the token:\n%s", env, log)
		}
	}
}
