package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReview62eHostFormIsAUsageError: "Every value is checked here, before
// anything is opened ...: a wrong one is a usage error" (run), exit 2
// naming the flag (README). A --host that is not a host name or an IP
// address passed the loopback check, which reads a Host header (with a
// port, an IPv6 address in brackets), and failed at listen instead: exit
// 1 with net's words, not naming --host (`listen tcp: address [[::1]]:0:
// missing port in address`, `listen tcp: lookup 127.0.0.1:8000: no such
// host`, after a DNS lookup). "[::1]" is how the server itself writes its
// address (`serving http://[::1]:PORT`), and "127.0.0.1:8000" how
// --host's help ("address to listen on") reads to many; the gateway
// refuses both as usage errors.
func TestReview62eHostFormIsAUsageError(t *testing.T) {
	for _, host := range []string{"[::1]", "[::1]:8000", "127.0.0.1:8000", "localhost:8000", "[::1", "127.0.0.1%lo", "localhost/mcp"} {
		for _, remote := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s_allow_remote_%v", host, remote), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "audit")
				t.Chdir(t.TempDir())
				// Bounded: were the value taken, the server would serve
				// until the context ends.
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
				defer cancel()
				args := []string{"serve-http", "--host", host, "--port", "0", "--audit-dir", dir}
				if remote {
					args = append(args, "--allow-remote")
				}
				stdout, stderr := &syncBuffer{}, &syncBuffer{}
				code := run(ctx, args, stdout, stderr)
				if code != 2 || !strings.Contains(stderr.String(), "--host") {
					t.Errorf("ticket %q: exit %d, stderr %q; want exit 2 naming --host", args, code, stderr)
				}
				for _, d := range []string{dir, "ticket-audit"} {
					if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("ticket %q: %s exists (%v), want nothing opened", args, d, err)
					}
				}
			})
		}
	}
	// The forms that are addresses still serve (IPv6 without brackets,
	// with a zone; a loopback name in any letter case).
	for _, host := range []string{"::1", "::1%lo", "LOCALHOST", "127.0.0.1"} {
		t.Run("serves_"+host, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			defer cancel()
			stdout, stderr := &syncBuffer{}, &syncBuffer{}
			code := run(ctx, []string{"serve-http", "--host", host, "--port", "0", "--audit-dir", t.TempDir()}, stdout, stderr)
			if code != 0 || !strings.Contains(stdout.String(), "serving http://") {
				t.Errorf("serve-http --host %s: exit %d, stdout %q, stderr %q; want it served", host, code, stdout, stderr)
			}
		})
	}
}
