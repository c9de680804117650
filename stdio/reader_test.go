package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *lockedBuffer) Close() error { return nil }

// serveLines serves a server with a "slow" tool over the transport of this
// package, reading in and writing to the returned buffer, until the
// transport's input ends; it returns the output and the log.
func serveLines(t *testing.T, in io.ReadCloser) (out, logs *lockedBuffer, err error) {
	t.Helper()
	out, logs = &lockedBuffer{}, &lockedBuffer{}
	s := newSession()
	w := newWriter(out, s)
	tr := &mcp.IOTransport{Reader: newReader(in, w, s, slog.New(slog.NewTextHandler(logs, nil)), 10*time.Second), Writer: w}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			time.Sleep(100 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	// A safety net only: the input's end ends the run. Tests that pass
	// 16 MiB lines take tens of seconds under -race on a loaded machine
	// (CI runs with helpers' jobs; 30 s was once too little).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err = server.Run(ctx, tr)
	return out, logs, err
}

// answer is one output line, reduced to what the tests compare.
type answer struct {
	ID   string
	Code int
}

func answers(t *testing.T, out string) []answer {
	t.Helper()
	var got []answer
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result"`
			Error   *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.JSONRPC != "2.0" || (msg.Result == nil) == (msg.Error == nil) {
			t.Fatalf("output line is not a JSON-RPC response: %q", line)
		}
		a := answer{ID: string(msg.ID)}
		if msg.Error != nil {
			a.Code = msg.Error.Code
		}
		got = append(got, a)
	}
	return got
}

// anyOrder compares answers as a multiset: requests are served concurrently.
var anyOrder = cmp.Transformer("anyOrder", func(a []answer) map[answer]int {
	m := map[answer]int{}
	for _, x := range a {
		m[x]++
	}
	return m
})

// TestReaderAnswersBadLines: a line the go-sdk cannot decode gets a
// JSON-RPC error on the output, is logged without its bytes, and the
// session goes on to answer the lines after it.
func TestReaderAnswersBadLines(t *testing.T) {
	in := strings.Join([]string{
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{not json secret-token-123`,
		`{"jsonrpc":"1.0","id":7,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, // no batches in 2025-11-25
		``,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}  `, // trailing blanks: passed without them
	}, "\n") + "\n"
	out, logs, err := serveLines(t, io.NopCloser(strings.NewReader(in)))
	if err != nil {
		t.Errorf("Run: %v, want nil at end of input", err)
	}
	want := []answer{{"1", 0}, {"null", codeParseError}, {"7", codeInvalidRequest}, {"null", codeInvalidRequest}, {"2", 0}, {"3", 0}}
	got := answers(t, out.String())
	if diff := cmp.Diff(want, got, anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
	}
	if n := strings.Count(logs.String(), "refused an input line"); n != 3 {
		t.Errorf("log has %d refusals, want 3:\n%s", n, logs)
	}
	if strings.Contains(logs.String(), "secret-token-123") {
		t.Errorf("log quotes a refused line:\n%s", logs)
	}
}

// failingReader returns data, then err.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

func (f *failingReader) Close() error { return nil }

// TestReaderReadErrorWaitsForAnswers: a read error ends the session like
// end of input, after the requests already read are answered.
func TestReaderReadErrorWaitsForAnswers(t *testing.T) {
	in := strings.Join([]string{
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
	}, "\n") + "\n"
	boom := errors.New("boom")
	out, _, err := serveLines(t, &failingReader{r: strings.NewReader(in), err: boom})
	if !errors.Is(err, boom) {
		t.Errorf("Run: %v, want the read error", err)
	}
	if diff := cmp.Diff([]answer{{"1", 0}, {"2", 0}}, answers(t, out.String())); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}

// TestReaderLineLimit: a line the go-sdk's frame limit just takes passes;
// one byte longer is refused, and the line after it is served.
func TestReaderLineLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 16 MiB lines")
	}
	long := func(n int) string {
		head, tail := `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"pad":"`, `"}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	in := initLine + "\n" + long(maxLine) + "\n" + long(maxLine+1) + "\n" + `{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\n"
	out, _, err := serveLines(t, io.NopCloser(strings.NewReader(in)))
	if err != nil {
		t.Errorf("Run: %v", err)
	}
	want := []answer{{"1", 0}, {"5", 0}, {"null", codeInvalidRequest}, {"6", 0}}
	if diff := cmp.Diff(want, answers(t, out.String()), anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}

// TestWriterKeepsLinesWhole: an answer written while the go-sdk is in the
// middle of a line waits for its end.
func TestWriterKeepsLinesWhole(t *testing.T) {
	out := &lockedBuffer{}
	w := newWriter(out, newSession())
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0",`)); err != nil {
		t.Fatal(err)
	}
	w.answer(errorLine(parseError("x")))
	if _, err := w.Write([]byte(`"id":1,"result":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	want := []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: x"}}`}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("output lines (-want +got):\n%s", diff)
	}
}
