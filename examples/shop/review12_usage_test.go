package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestReview12RedisUsageErrors: an empty --redis started the shop with its
// caps in memory, silently unshared between replicas; --redis without
// SHOP_MCP_CONFIRM_KEY exited 1 where every other flag error exits 2. Both
// are usage errors now, before anything is opened.
func TestReview12RedisUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name, value, key, want string
	}{
		{"empty", "", strings.Repeat("ab", 32), "--redis"},
		{"without_confirm_key", "127.0.0.1:1", "", confirmKeyEnv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "--gateway", "http://127.0.0.1:1", "--transport", "http", "--addr", "127.0.0.1:0", "--redis", tc.value)
			env := []string{}
			for _, e := range os.Environ() {
				if !strings.HasPrefix(e, confirmKeyEnv+"=") {
					env = append(env, e)
				}
			}
			if tc.key != "" {
				env = append(env, confirmKeyEnv+"="+tc.key)
			}
			cmd.Env = env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out.String(), tc.want) {
				t.Errorf("--redis %q: %v, output %q; want exit status 2 naming %s", tc.value, err, out.String(), tc.want)
			}
		})
	}
}
