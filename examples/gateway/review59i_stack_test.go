//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// r59iStart starts bin with args and returns its command; it is killed at
// the test's end.
func r59iStart(t *testing.T, bin string, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCP_GATEWAY_TOKENS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, logs
}

// r59iRecords reads a JSONL audit file.
func r59iRecords(t *testing.T, file string) []map[string]any {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func r59iSummary(recs []map[string]any, tool string) []string {
	var s []string
	for _, r := range recs {
		if r["tool"] != tool {
			continue
		}
		s = append(s, r["phase"].(string)+"/"+func() string {
			b, _ := json.Marshal([]any{r["allowed"], r["code"], r["detail"], r["cost"]})
			return string(b)
		}())
	}
	return s
}

// r59iStop stops a binary gracefully, so that its audit file is whole.
func r59iStop(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not stop within 10 s of SIGTERM", cmd.Path)
	}
}
