package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runCLI runs the command in-process and returns its exit status and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	code := run(t.Context(), args, stdout, stderr)
	return code, stdout.String(), stderr.String()
}

func TestToolsCommandListsTheRegistry(t *testing.T) {
	code, out, errOut := runCLI(t, "tools")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines:\n%s", out)
	}
	wantLines := []*regexp.Regexp{
		regexp.MustCompile(`^\s+create_ticket\s+WRITE \[DISABLED \(not allowlisted\)\]\s+cost=5\s+Create a ticket`),
		regexp.MustCompile(`^\s+list_tools\s+read-only\s+cost=0\s+List the tool registry`),
		regexp.MustCompile(`^\s+search_docs\s+read-only\s+cost=1\s+Search internal docs`),
	}
	for i, re := range wantLines {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}

	// With create_ticket allowlisted in a config file of one's own.
	base, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(base), "allowed_write_tools: []", "allowed_write_tools: [create_ticket]", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--config", path, "tools"}, {"tools", "--config", path}} {
		code, out, errOut = runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "WRITE [ENABLED]") {
			t.Errorf("%v: exit %d, out:\n%s%s", args, code, out, errOut)
		}
	}
}

func TestCommandLineErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("dry_run: true\nallowed_write_tool: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no_command", nil, 2, "usage:"},
		{"unknown_command", []string{"serve"}, 2, `unknown command "serve"`},
		{"unknown_flag", []string{"tools", "--allow-writes"}, 2, "flag provided but not defined"},
		{"extra_argument", []string{"demo", "now"}, 2, "unexpected arguments"},
		{"missing_config", []string{"--config", filepath.Join(t.TempDir(), "nope.yaml"), "tools"}, 1, "no such file"},
		{"unknown_config_key", []string{"--config", bad, "demo"}, 1, "line 2: field allowed_write_tool not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tt.code, tt.want)
			}
		})
	}
}

func TestDemoCommandRunsFullScenario(t *testing.T) {
	code, out, errOut := runCLI(t, "demo")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		`alice (engineering): sees docs ["eng-001" "eng-002" "all-001"]`,
		`bob (sales): sees docs ["sales-001" "sales-002" "all-001"]`,
		`no token -> ok=false error={"code":"UNAUTHENTICATED"`,
		`unknown token -> ok=false error={"code":"UNAUTHENTICATED"`,
		`create_ticket denied: {"code":"WRITE_NOT_ALLOWED"`,
		"tickets really created downstream: 0",
		"call 5/6: allowed",
		"call 6/6: DENIED (RATE_LIMIT_EXCEEDED)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "DRYRUN-") {
		t.Errorf("a write got through without the allowlist:\n%s", out)
	}
	// The burst session's name ends in the run's id (review23b).
	if got := burstSessionLine.FindAllString(out, -1); len(got) != 6 || !strings.Contains(got[5],
		`,"subject":"alice","tool":"search_docs","class":"read","allowed":false,"dry_run":false,"code":"RATE_LIMIT_EXCEEDED"`) {
		t.Errorf("%d audit lines of the burst session, want 6, the last refused RATE_LIMIT_EXCEEDED:\n%s", len(got), out)
	}
}

func TestDemoCommandWithAllowWritesFlag(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "demo", "--allow-writes", "--audit-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, re := range []string{
		`create_ticket allowed \(allowlisted\): ticket_id=DRYRUN-[0-9a-f]{16} dry_run=true`,
		`\[DRY RUN\] create_ticket simulated, downstream not called" subject=alice session_id=rest-demo-alice@alice`,
		"tickets really created downstream: 0",
		`call 6/6: DENIED \(RATE_LIMIT_EXCEEDED\)`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("demo --allow-writes output lacks %s:\n%s", re, out)
		}
	}
	// The trail was kept where asked, in both forms.
	for _, f := range []string{auditJSONL, auditSQLite} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, auditJSONL))
	if err != nil || !strings.Contains(string(b), `"tool":"create_ticket","class":"write","phase":"outcome","allowed":true,"dry_run":true`) {
		t.Errorf("JSONL lacks the dry-run record (%v):\n%s", err, b)
	}
}
