package stdio

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipe returns the two ends of a new pipe, closed at the end of the test.
// It skips the test where Isolate refuses the files of Options.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("stdio: Isolate takes no files in Options on windows")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// logFile returns a new file standing in for standard error.
func logFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr-*.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestIsolateTwiceRefused: a second Isolate finds standard input reading
// the null device and standard output going to standard error, as the first
// left them. It returned a transport that read end of file at once and
// wrote JSON-RPC to the log (or, when standard error is a pipe, blamed
// 2>&1); it must say that Isolate was already called.
func TestIsolateTwiceRefused(t *testing.T) {
	for _, name := range []string{"stderr_file", "stderr_pipe"} {
		t.Run(name, func(t *testing.T) {
			in, _ := pipe(t)
			_, out := pipe(t)
			var errf *os.File
			if name == "stderr_file" {
				errf = logFile(t)
			} else {
				_, errf = pipe(t)
			}
			o := &Options{Stdin: in, Stdout: out, Stderr: errf}
			tr, err := Isolate(o)
			if err != nil {
				t.Fatalf("first Isolate: %v", err)
			}
			defer tr.Reader.Close()
			defer tr.Writer.Close()
			tr2, err := Isolate(o)
			if err == nil {
				tr2.Reader.Close()
				tr2.Writer.Close()
				t.Fatal("second Isolate on the same streams: got nil error, want one")
			}
			if !strings.Contains(err.Error(), "Isolate was already called") {
				t.Errorf("second Isolate: %q, want it to say that Isolate was already called", err)
			}
		})
	}
}

// TestIsolateClosedFile: a closed (or nil) file among the streams is
// refused with an error that names it. A closed Stdout and Stderr were
// reported as "the same descriptor", the others as a bare "dup: bad file
// descriptor".
func TestIsolateClosedFile(t *testing.T) {
	tests := []struct {
		name   string
		closed []string // of "in", "out", "err"
		want   string
	}{
		{"stdin", []string{"in"}, "standard input is nil or closed"},
		{"stdout", []string{"out"}, "standard output is nil or closed"},
		{"stderr", []string{"err"}, "standard error is nil or closed"},
		{"stdout_and_stderr", []string{"out", "err"}, "standard output is nil or closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, _ := pipe(t)
			_, out := pipe(t)
			errf := logFile(t)
			files := map[string]*os.File{"in": in, "out": out, "err": errf}
			for _, c := range tt.closed {
				files[c].Close()
			}
			tr, err := Isolate(&Options{Stdin: in, Stdout: out, Stderr: errf})
			if err == nil {
				tr.Reader.Close()
				tr.Writer.Close()
				t.Fatalf("Isolate with %v closed: got nil error, want one", tt.closed)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Isolate with %v closed: %q, want it to contain %q", tt.closed, err, tt.want)
			}
		})
	}
}

// TestIsolateSharedDescriptor: one descriptor given for standard input and
// another stream is refused, leaving it as it was. It was accepted, and
// pointing that descriptor at the null device broke the other stream: the
// stray prints to a shared Stdout were lost, and with a shared Stderr the
// log and the stray prints both failed with "bad file descriptor".
func TestIsolateSharedDescriptor(t *testing.T) {
	tests := []struct {
		name string
		opts func(shared, other *os.File) *Options
	}{
		{"stdin_is_stdout", func(shared, other *os.File) *Options {
			return &Options{Stdin: shared, Stdout: shared, Stderr: other}
		}},
		{"stdin_is_stderr", func(shared, other *os.File) *Options {
			return &Options{Stdin: shared, Stdout: other, Stderr: shared}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shared := logFile(t)
			_, other := pipe(t)
			tr, err := Isolate(tt.opts(shared, other))
			if err == nil {
				tr.Reader.Close()
				tr.Writer.Close()
				t.Errorf("Isolate with one descriptor for two streams: got nil error, want one")
			} else if !strings.Contains(err.Error(), "the same descriptor") {
				t.Errorf("Isolate: %q, want it to say two streams are the same descriptor", err)
			}
			if _, err := shared.WriteString("still writable\n"); err != nil {
				t.Errorf("the shared file after Isolate: %v, want it left as it was", err)
			}
		})
	}
}

// TestBatchRepeatedIDKeepsSession: a batch that repeats an id, within
// itself or that of a batch member still tracked (a notification's empty
// id stays tracked for good), ends the go-sdk's session; the transport
// answers it with -32600 and a null id and serves the line after it.
func TestBatchRepeatedIDKeepsSession(t *testing.T) {
	tests := []struct {
		name  string
		lines []string // after initialize (2025-03-26) and initialized
		want  []answer // besides initialize's
	}{
		{"within_batch", []string{
			`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":2.0,"method":"ping"}]`,
		}, []answer{{"null", codeInvalidRequest}}},
		// 1.9 is refused alone (review57: an id the SDK would answer
		// changed), with a null id as 1e0, its id to the SDK, is in
		// flight; 1e0 is served.
		{"number_forms", []string{
			`[{"jsonrpc":"2.0","id":1e0,"method":"ping"},{"jsonrpc":"2.0","id":1.9,"method":"ping"}]`,
		}, []answer{{"null", codeInvalidRequest}, {"1", 0}}},
		{"second_notification_batch", []string{
			`[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`,
			`[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`,
		}, []answer{{"null", codeInvalidRequest}}},
		{"string_and_number_differ", []string{
			`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":"2","method":"ping"}]`,
		}, []answer{{"2", 0}, {`"2"`, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := batchLines(strings.Join(tt.lines, "\n"))
			_, sdkErr := sdkRead(t, []byte(in))
			if repeats := tt.want[0].Code != 0; repeats != (sdkErr != nil) {
				t.Fatalf("the go-sdk alone on this input: %v; want an error %t", sdkErr, repeats)
			}
			// Send the batches once the answer to initialize is out: before,
			// the transport refuses any batch.
			out := &lockedBuffer{}
			w, done := rawServer(t, out, nil)
			first, rest, _ := strings.Cut(in, "\n")
			if _, err := io.WriteString(w, first+"\n"); err != nil {
				t.Fatal(err)
			}
			waitLines(t, out, 1)
			go func() {
				io.WriteString(w, rest)
				w.Close()
			}()
			if err := <-done; err != nil {
				t.Errorf("Run: %v, want nil at end of input (a line the transport passed ended the session)", err)
			}
			want := append([]answer{{"1", 0}, {"3", 0}}, tt.want...)
			if diff := cmp.Diff(want, flatAnswers(t, out.String()), anyOrder); diff != "" {
				t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
			}
		})
	}
}

// flatAnswers is answers with the members of batch answers each counted.
func flatAnswers(t *testing.T, out string) []answer {
	t.Helper()
	var got []answer
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "[") {
			got = append(got, answers(t, line)...)
			continue
		}
		var batch []json.RawMessage
		if err := json.Unmarshal([]byte(line), &batch); err != nil {
			t.Fatalf("output line %q is not a batch answer", line)
		}
		for _, m := range batch {
			got = append(got, answers(t, string(m))...)
		}
	}
	return got
}

// TestReusedIDInFlightAnswered: the go-sdk drops, unanswered, a request
// whose id is that of a request in flight (jsonrpc2 clears the id and
// treats it as a notification), so a client waiting for it waits for
// good. The transport answers it with -32600 and a null id, as it does a
// batch that reuses such an id, and serves the line after it.
func TestReusedIDInFlightAnswered(t *testing.T) {
	in := strings.Join([]string{
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,   // 2 is in flight (the tool sleeps)
		`{"jsonrpc":"2.0","id":2.5,"method":"ping"}`, // the go-sdk reads 2.5 as 2
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}, "\n") + "\n"
	out, logs, err := serveLines(t, io.NopCloser(strings.NewReader(in)))
	if err != nil {
		t.Errorf("Run: %v, want nil at end of input", err)
	}
	want := []answer{{"1", 0}, {"2", 0}, {"null", codeInvalidRequest}, {"null", codeInvalidRequest}, {"3", 0}}
	if diff := cmp.Diff(want, answers(t, out.String()), anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
	}
	if n := strings.Count(logs.String(), "refused an input line"); n != 2 {
		t.Errorf("log has %d refusals, want 2:\n%s", n, logs)
	}
}

// echoWriter stands in for a client that reads each answer and at once
// sends the request after it, reusing the answered id: when it is handed
// an answer, it writes next to the server's input and lets the transport
// read and check it, before the answer's Write returns.
type echoWriter struct {
	out  lockedBuffer
	in   *io.PipeWriter
	next string // sent once, on the first answer with "id":2
	sent bool
}

func (e *echoWriter) Write(p []byte) (int, error) {
	n, err := e.out.Write(p)
	if !e.sent && strings.Contains(string(p), `"id":2,`) {
		e.sent = true
		// An io.Pipe write returns once the transport has read it all;
		// the transport checks the line before its Read returns.
		if _, err := io.WriteString(e.in, e.next); err != nil {
			return n, err
		}
		// Give the transport time to check the line it has read: a
		// refusal would wait on this Write, an admission would not.
		time.Sleep(100 * time.Millisecond)
	}
	return n, err
}

func (e *echoWriter) Close() error { return nil }

// TestIDReusedAfterAnswerPassed: a client may reuse an id once it has
// read its answer (the go-sdk takes it then). The transport must count the
// request answered before the client can read the answer, or it would
// refuse the new request as reusing an id in flight.
func TestIDReusedAfterAnswerPassed(t *testing.T) {
	inR, inW := io.Pipe()
	defer inR.Close()
	e := &echoWriter{in: inW, next: `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"}
	s := newSession()
	w := newWriter(e, s)
	tr := &mcp.IOTransport{Reader: newReader(inR, w, s, slog.New(slog.NewTextHandler(io.Discard, nil)), 10*time.Second), Writer: w}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, tr) }()
	if _, err := io.WriteString(inW, initLine+"\n"+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	waitLines(t, &e.out, 3)
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	want := []answer{{"1", 0}, {"2", 0}, {"2", 0}}
	if diff := cmp.Diff(want, answers(t, e.out.String()), anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, &e.out)
	}
}
