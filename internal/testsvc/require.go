package testsvc

import (
	"os"
	"testing"
)

// RequireEnv is the environment variable that turns a missing server binary
// from a skip into a failure. .ci/run sets it: in CI nothing may skip.
const RequireEnv = "MCPGUARD_REQUIRE_SERVERS"

// Missing skips t with msg, or fails it when [RequireEnv] is set to a
// non-empty value.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(RequireEnv) != "" {
		t.Fatal(msg + " (" + RequireEnv + " is set, so this is a failure, not a skip)")
	}
	t.Skip(msg)
}
