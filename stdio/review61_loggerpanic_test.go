package stdio_test

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/stdio"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r61PanicHandler is a slog.Handler whose every Handle panics (an
// operator's log handler's bug).
type r61PanicHandler struct{}

func (r61PanicHandler) Enabled(context.Context, slog.Level) bool { return true }
func (r61PanicHandler) Handle(context.Context, slog.Record) error {
	panic("review61: the log handler's bug")
}
func (h r61PanicHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h r61PanicHandler) WithGroup(string) slog.Handler      { return h }

// TestReview61LoggerPanicContained: the transport logs a refused input
// line on its reader goroutine; a Logger whose handler panicked there (its
// bug) ended the server's process (no recover on that goroutine). The
// panic is contained now: the line is refused as before, and the session
// goes on to answer the next request.
func TestReview61LoggerPanicContained(t *testing.T) {
	serverIn, clientOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	clientIn, serverOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.CreateTemp(t.TempDir(), "stderr-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	tr, err := stdio.Isolate(&stdio.Options{Stdin: serverIn, Stdout: serverOut, Stderr: logFile, Logger: slog.New(r61PanicHandler{})})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	done := make(chan error, 1)
	go func() { done <- server.Run(context.Background(), tr) }()
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{not json`, // refused and logged
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
	}
	if _, err := clientOut.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(clientIn)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"id":2`) {
				got <- sc.Text()
				return
			}
		}
		close(got)
	}()
	select {
	case line, ok := <-got:
		if !ok || !strings.Contains(line, `"result"`) {
			t.Errorf("the ping after the refused line: %q", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to the ping after the refused line")
	}
	clientOut.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("the server did not end with its input")
	}
}
