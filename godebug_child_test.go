package mcpguard_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// godebugChild is set in the environment of a child process that
// runGodebugChild starts.
const godebugChild = "MCPGUARD_GODEBUG_CHILD"

// inGodebugChild reports whether this test binary runs as a child that
// runGodebugChild started: a child test does its work only then.
func inGodebugChild() bool { return os.Getenv(godebugChild) != "" }

// runGodebugChild runs the test (or subtest path) run of this binary in a
// child process with MCPGODEBUG=setting, which go-sdk v1.8.0 reads once,
// at start, and fails t unless it passes.
func runGodebugChild(t *testing.T, run, setting string) {
	t.Helper()
	parts := strings.Split(run, "/")
	pattern := make([]string, len(parts))
	for i, p := range parts {
		pattern[i] = "^" + p + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(pattern, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), godebugChild+"=1", "MCPGODEBUG="+setting)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+run) {
		t.Fatalf("child (MCPGODEBUG=%s): %v\n%s", setting, err, out)
	}
}
