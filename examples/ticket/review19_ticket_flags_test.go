package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview19UsageErrorsOpenNothing: a flag or environment value that is
// wrong is a usage error, exit 2 naming it, found before anything is
// opened. A --port out of range, a non-loopback --host, an empty
// --audit-dir and a malformed TICKET_MCP_AUDIT_KEY were found only after
// the audit directory was created and its files opened (with --redis or
// --audit-postgres, after those servers were dialled, the table created),
// and three of them exited 1 (`mkdir : no such file or directory`,
// `listen tcp: address 70000: invalid port`).
func TestReview19UsageErrorsOpenNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string // after the command; the audit dir, when named, is auditDir
		env  string   // TICKET_MCP_AUDIT_KEY
		want string
	}{
		{"port_negative", []string{"serve-http", "--port", "-1", "--audit-dir", "<dir>"}, "", "--port"},
		{"port_too_large", []string{"serve-http", "--port", "65536", "--audit-dir", "<dir>"}, "", "--port"},
		{"host_not_loopback", []string{"serve-http", "--host", "0.0.0.0", "--port", "0", "--audit-dir", "<dir>"}, "", "not a loopback address"},
		{"host_not_loopback_before_redis", []string{"serve-http", "--host", "0.0.0.0", "--port", "0", "--audit-dir", "<dir>", "--redis", "<closed>"}, "", "not a loopback address"},
		{"audit_dir_empty", []string{"serve-http", "--port", "0", "--audit-dir", ""}, "", "--audit-dir"},
		{"demo_audit_dir_empty", []string{"demo", "--audit-dir", ""}, "", "--audit-dir"},
		{"audit_key_short", []string{"serve-http", "--port", "0", "--audit-dir", "<dir>"}, "0011", auditKeyEnv},
		{"audit_key_not_hex", []string{"serve-http", "--port", "0", "--audit-dir", "<dir>", "--redis", "<closed>"}, strings.Repeat("zz", 16), auditKeyEnv},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(auditKeyEnv, c.env)
			dir := filepath.Join(t.TempDir(), "audit")
			args := make([]string, len(c.args))
			for i, a := range c.args {
				switch a {
				case "<dir>":
					a = dir
				case "<closed>":
					a = closedAddr(t)
				}
				args[i] = a
			}
			// From a directory of its own: the default --audit-dir is
			// relative (ticket-audit).
			t.Chdir(t.TempDir())
			stdout, stderr := &syncBuffer{}, &syncBuffer{}
			code := run(t.Context(), args, stdout, stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("ticket %q: exit %d, stderr %q; want exit 2 naming %q", args, code, stderr, c.want)
			}
			if stdout.String() != "" {
				t.Errorf("ticket %q printed %q", args, stdout)
			}
			for _, d := range []string{dir, "ticket-audit"} {
				if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("ticket %q: %s exists (%v), want nothing opened", args, d, err)
				}
			}
		})
	}
	// serve-stdio, through the binary (run would isolate this process's
	// stdio): the same checks, before the stdio channel is taken.
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--audit-dir", ""}, "", "--audit-dir"},
		{[]string{"--audit-dir", "<dir>"}, "0011", auditKeyEnv},
	} {
		dir := filepath.Join(t.TempDir(), "audit")
		args := []string{"serve-stdio"}
		for _, a := range c.args {
			if a == "<dir>" {
				a = dir
			}
			args = append(args, a)
		}
		cmd := exec.Command(ticketBinary(t), args...)
		cmd.Env = append(os.Environ(), auditKeyEnv+"="+c.env)
		cmd.Stdin = strings.NewReader("")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr // not one pipe: stdio.Isolate refuses that
		err := cmd.Run()
		out := stdout.String() + stderr.String()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, c.want) {
			t.Errorf("ticket %q (%s=%q): %v, output %q; want exit 2 naming %q", args, auditKeyEnv, c.env, err, out, c.want)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("ticket %q: %s exists (%v), want nothing opened", args, dir, err)
		}
	}
}
