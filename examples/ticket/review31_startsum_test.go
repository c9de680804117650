//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReview31StartLogsConfigSum: a reload logs the SHA-256 of the file it
// read; the start now logs the one of the configuration it started with,
// so that an operator can tell which file is in force.
func TestReview31StartLogsConfigSum(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "server.yaml")
	sum := writeConfig(t, cfgPath, reloadBase(t))
	r := startReplica(t, nil, "--config", cfgPath, "--audit-dir", filepath.Join(dir, "audit"))
	awaitReloadLog(t, r.stderr, "configuration in force", 1)
	logs := r.stderr.String()
	if !strings.Contains(logs, "sha256="+sum) || !strings.Contains(logs, "config="+cfgPath) {
		t.Errorf("the start does not log the file and its SHA-256 %s:\n%s", sum, logs)
	}
}
