package stdio_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/stdio"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// childEnv makes the test binary run as a noisy stdio server (see TestMain).
const childEnv = "MCPGUARD_STDIO_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

// runChild is a stdio MCP server whose "noisy" tool writes junk to stdout
// in every way a careless handler might, and reads stdin.
func runChild() int {
	t, err := stdio.Isolate(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("junk: printed at start-up")
	server := mcp.NewServer(&mcp.Implementation{Name: "noisy", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "noisy", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Println("junk: fmt.Println")
			os.Stdout.WriteString("junk: os.Stdout.WriteString\n")
			fmt.Fprint(os.Stdout, `{"jsonrpc":"2.0","partial`) // no newline: would tear the next frame
			if runtime.GOOS != "windows" {
				c := exec.Command("sh", "-c", "echo junk: child process")
				c.Stdout = os.Stdout
				_ = c.Run()
			}
			n, rerr := os.Stdin.Read(make([]byte, 64))
			text := fmt.Sprintf("stdin read %d bytes, EOF %t", n, errors.Is(rerr, io.EOF))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	if err := server.Run(context.Background(), t); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// child returns a command running the test binary as the noisy server, with
// stderr captured in the returned buffer.
func child(t *testing.T) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	return cmd, &stderr
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestIsolateChildProcess(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		name := "default_protocol"
		if version != "" {
			name = "protocol_" + strings.ReplaceAll(version, "-", "_")
		}
		t.Run(name, func(t *testing.T) {
			cmd, stderr := child(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("Connect: %v; stderr:\n%s", err, stderr)
			}
			for i := range 3 {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "noisy"})
				if err != nil {
					t.Fatalf("call %d: %v; stderr:\n%s", i, err, stderr)
				}
				want := "stdin read 0 bytes, EOF true"
				if got := res.Content[0].(*mcp.TextContent).Text; got != want {
					t.Errorf("call %d: got %q, want %q", i, got, want)
				}
			}
			if err := cs.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			logs := stderr.String()
			for _, junk := range []string{"junk: printed at start-up", "junk: fmt.Println", "junk: os.Stdout.WriteString", "junk: child process"} {
				if runtime.GOOS == "windows" && junk == "junk: child process" {
					continue
				}
				if got := strings.Count(logs, junk); got < 1 {
					t.Errorf("stderr has %d copies of %q, want at least 1; stderr:\n%s", got, junk, logs)
				}
			}
		})
	}
}

// TestIsolateRawStdout drives the child with hand-made JSON-RPC lines and
// checks that every line of its stdout is a JSON-RPC response.
func TestIsolateRawStdout(t *testing.T) {
	cmd, stderr := child(t)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	requests := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"noisy","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"noisy","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var ids []float64
	for _, r := range requests {
		if _, err := io.WriteString(stdin, r+"\n"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r, `"id"`) {
			continue
		}
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("stdout closed early; stderr:\n%s", stderr)
			}
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      float64         `json:"id"`
				Result  json.RawMessage `json:"result"`
				Error   json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.JSONRPC != "2.0" || (msg.Result == nil && msg.Error == nil) {
				t.Fatalf("stdout line is not a JSON-RPC response: %q (%v)", line, err)
			}
			ids = append(ids, msg.ID)
		case <-time.After(20 * time.Second):
			t.Fatalf("no response to %s; stderr:\n%s", r, stderr)
		}
	}
	stdin.Close()
	for line := range lines {
		t.Errorf("unexpected stdout line after the last response: %q", line)
	}
	if diff := cmp.Diff([]float64{1, 2, 3, 4}, ids); diff != "" {
		t.Errorf("response ids (-want +got):\n%s", diff)
	}
	if !strings.Contains(stderr.String(), "junk: fmt.Println") {
		t.Errorf("the handler's print did not reach stderr:\n%s", stderr)
	}
}

// TestIsolateDrain writes every request and closes stdin at once, as
// `printf ... | server` does: every request is still answered.
func TestIsolateDrain(t *testing.T) {
	cmd, stderr := child(t)
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"noisy","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"ping"}`,
		`{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`,
	}, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v; stderr:\n%s", err, stderr)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC: %q", line)
		}
		ids = append(ids, string(msg.ID))
	}
	sort.Strings(ids) // answers may come in any order
	if diff := cmp.Diff([]string{`"three"`, "1", "2", "4"}, ids); diff != "" {
		t.Errorf("answered ids (-want +got):\n%s", diff)
	}
}

func TestIsolateSameDescriptor(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := stdio.Isolate(&stdio.Options{Stdin: r, Stdout: w, Stderr: w}); err == nil {
		t.Error("Isolate with Stdout == Stderr: got nil error, want one")
	}
}

// TestIsolateBadLines: lines that are not JSON-RPC messages are answered
// with JSON-RPC errors on stdout and logged on stderr; the server serves
// the lines after them and exits 0 at end of input.
func TestIsolateBadLines(t *testing.T) {
	cmd, stderr := child(t)
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{not json`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`[]`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"noisy","arguments":{}}}`,
	}, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v; stderr:\n%s", err, stderr)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC: %q", line)
		}
		code := 0
		if msg.Error != nil {
			code = msg.Error.Code
		}
		got = append(got, fmt.Sprintf("%s %d", msg.ID, code))
	}
	sort.Strings(got)
	if diff := cmp.Diff([]string{"1 0", "2 0", "null -32600", "null -32700"}, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s\nstderr:\n%s", diff, stderr)
	}
	if n := strings.Count(stderr.String(), "refused an input line"); n != 2 {
		t.Errorf("stderr has %d refusals, want 2:\n%s", n, stderr)
	}
}
