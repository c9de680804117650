package main

import (
	"flag"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// TestReview32FlagValueNotShown: a URL with its password typed into a
// number or duration flag (--port, --jwt-leeway) was printed whole by the
// flag package ("invalid value \"https://...\" for flag -port"), and so
// was one put after two dashes (a flag not defined, named by it). The
// gateway now parses with cliarg.Parse, which shows it as cliarg.Shown
// does, then prints the usage; the error is a usage error (exit status 2).
// (With the real flag.CommandLine, ExitOnError, Parse exits 2 itself.)
func TestReview32FlagValueNotShown(t *testing.T) {
	const pw = "https://svc:s3cret@127.0.0.1:9000/mcp"
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	for _, args := range [][]string{
		{"--port", pw, "--host", "127.0.0.1"},
		{"--jwt-leeway=" + pw, "--host", "127.0.0.1"},
		{"--filter-tools-list=" + pw, "--host", "127.0.0.1"},
		{"--" + pw, "--host", "127.0.0.1"},
	} {
		var out strings.Builder
		flag.CommandLine = flag.NewFlagSet("gateway", flag.ContinueOnError)
		flag.CommandLine.SetOutput(&out)
		os.Args = append([]string{"gateway"}, args...)
		logs := &runLogs{}
		done := make(chan error, 1)
		go func() { done <- run(slog.New(slog.NewTextHandler(logs, nil))) }()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: run did not return", args)
		}
		if err == nil || exitCode(err) != 2 || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: run returned %v, want a usage error without the password", args, err)
		}
		if strings.Contains(out.String(), "s3cret") || !strings.Contains(out.String(), "not shown") ||
			!strings.Contains(out.String(), "Usage: gateway") || strings.Contains(logs.String(), "s3cret") {
			t.Errorf("%q: printed %q, logged %q: want the value named, not shown, then the usage", args, out.String(), logs.String())
		}
	}
}
