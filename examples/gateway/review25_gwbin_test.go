package main

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bigFile returns the path of a sparse file of size bytes (zeros).
func bigFile(t *testing.T, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReview25FlagFilesBounded: the files of --tool-pins and --jwt-jwks
// were read whole, whatever their size (a wrong path, /dev/zero or a log
// file, read into memory before any check), unlike --policy's. A file over
// maxFlagFile is refused now, with exit status 2 and a message naming the
// flag and the limit; one of exactly the limit is read (and then refused
// as it does not parse).
func TestReview25FlagFilesBounded(t *testing.T) {
	answeringDownstream(t) // saves the flags and arguments
	base := []string{"--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp"}
	for _, tc := range []struct {
		flag string
		args []string
	}{
		{"--tool-pins", nil},
		{"--jwt-jwks", []string{"--jwt-issuer", "https://issuer.example", "--jwt-audience", "gw"}},
	} {
		for _, size := range []int64{maxFlagFile + 1, maxFlagFile} {
			path := bigFile(t, size)
			args := append(append(append([]string{}, base...), tc.flag, path), tc.args...)
			url, err, stop, logs := startRun(t, args...)
			if url != "" {
				stop()
				t.Fatalf("%s of %d bytes: the gateway started", tc.flag, size)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			over := strings.Contains(msg, "16 MiB")
			switch {
			case err == nil || exitCode(err) != 2 || !strings.Contains(msg, tc.flag):
				t.Errorf("%s of %d bytes: err %v (exit status %d), want a usage error naming the flag\n%s", tc.flag, size, err, exitCode(err), logs)
			case size > maxFlagFile && !over:
				t.Errorf("%s of %d bytes: %v, want the limit named", tc.flag, size, err)
			case size == maxFlagFile && over:
				t.Errorf("%s of exactly the limit: %v, want it read (and refused as not parsing)", tc.flag, err)
			}
		}
	}
}

// TestReview25PrintPinsRefusesOtherFlags: --print-pins listed the tools and
// exited before the other flags were checked, so a command line that
// would not start ("--policy missing.json", two ways of verifying tokens)
// printed pins without a word, and flags --print-pins does not use
// (--policy, --filter-tools-list, --host...) read as if they shaped the
// listing. They are refused now (exit status 2), before the downstream is
// asked anything; --upstream and --timeout are its only flags.
func TestReview25PrintPinsRefusesOtherFlags(t *testing.T) {
	answeringDownstream(t)
	for _, extra := range [][]string{
		{"--policy", "missing.json"},
		{"--filter-tools-list"},
		{"--host", "0.0.0.0"},
		{"--tool-pins", "pins.json"},
		{"--std-transport"},
	} {
		args := append([]string{"--upstream", "http://127.0.0.1:1/mcp", "--timeout", "1", "--print-pins"}, extra...)
		url, err, stop, _ := startRun(t, args...)
		if url != "" {
			stop()
			t.Fatalf("%v: the gateway started", args)
		}
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), extra[0]) {
			t.Errorf("%v: err %v (exit status %d), want a usage error naming %s", args, err, exitCode(err), extra[0])
		}
	}
}

// TestReview25HangUpMidBody: a client that hangs up in the middle of a
// POST's body is logged and recorded in the --audit file, once the
// gateway stopped (the sink flushes then).
func TestReview25HangUpMidBody(t *testing.T) {
	down := answeringDownstream(t)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp", "--audit", auditPath)
	if url == "" {
		t.Fatalf("gateway did not start: %v\n%s", err, logs)
	}
	c := rawPost(t, url, 1000, `{"jsonrpc":"2.0","id":1,"method":"tools/call",`, "Authorization: Bearer viewer-token")
	time.Sleep(50 * time.Millisecond)
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "body could not be read") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// The gateway still serves the next client.
	c = rawPost(t, url, 2, "{}")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the next POST: %v %v", resp, err)
	}
	stop()
	if !strings.Contains(logs.String(), "body could not be read") {
		t.Errorf("no log line for the hang-up:\n%s", logs)
	}
	data, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "body could not be read") {
		t.Errorf("no audit record for the hang-up:\n%s", data)
	}
}
