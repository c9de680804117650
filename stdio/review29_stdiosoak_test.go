//go:build unix

package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// soakFDs returns the number of descriptors the process has open.
func soakFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// soakSettle waits until the goroutines and descriptors are back to at most
// their baselines, and fails the test if they are not within 5 s.
func soakSettle(t *testing.T, goroutines, fds int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		g, f := runtime.NumGoroutine(), soakFDs(t)
		if g <= goroutines && f <= fds {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("after the session: %d goroutines (baseline %d), %d descriptors (baseline %d)\n%s", g, goroutines, f, fds, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// soakReply is one answer on the output, reduced to what the soak checks.
type soakReply struct {
	ID     json.RawMessage
	Method string
	Result *struct {
		Content []struct{ Text string }
	}
	Error *struct{ Code int }
}

// soakRig is a server over the transport of this package on two OS pipes,
// with bounds of maxInFlight requests and maxBytes bytes in flight. Its tools: "echo" returns
// its argument n after a random pause (answers come out of order), "wait"
// returns when its call is cancelled, "slow" after 100 ms (or when its call
// is cancelled), "hang" ignores its cancellation and
// returns when the test releases it, "ask" asks the client for its roots.
type soakRig struct {
	t       *testing.T
	s       *session
	inW     *os.File // the client's end of the server's input
	outR    *os.File // the client's end of the server's output
	wmu     sync.Mutex
	ran     chan error
	release chan struct{}
	logs    *lockedBuffer
}

func newSoakRig(t *testing.T, maxInFlight, maxBytes int, drain time.Duration, stop <-chan struct{}) *soakRig {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &soakRig{t: t, s: newSession(), inW: inW, outR: outR, ran: make(chan error, 1), release: make(chan struct{}), logs: &lockedBuffer{}}
	h.s.maxInFlight, h.s.maxBytes = maxInFlight, maxBytes
	w := newWriter(outW, h.s)
	r := newReader(inR, w, h.s, slog.New(slog.NewTextHandler(h.logs, nil)), drain)
	r.stop = stop
	tr := &mcp.IOTransport{Reader: r, Writer: w}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	obj := map[string]any{"type": "object"}
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ N int }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(args.N)}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "slow", InputSchema: obj},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow"}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "wait", InputSchema: obj},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	server.AddTool(&mcp.Tool{Name: "hang", InputSchema: obj},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-h.release
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "ask", InputSchema: obj},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			//lint:ignore SA1019 a server-to-client request; roots is one the go-sdk v1.8.0 still sends
			if _, err := req.Session.ListRoots(ctx, nil); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "roots"}}}, nil
		})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	go func() { h.ran <- server.Run(ctx, tr) }()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return h
}

// send writes lines to the server's input, each with its newline, in one
// write; it reports false once the input is closed.
func (h *soakRig) send(lines ...string) bool {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_, err := io.WriteString(h.inW, strings.Join(lines, "\n")+"\n")
	return err == nil
}

// read reads the output until it ends, and sends each message on the
// channel it returns (a batch answer as its members). It answers the
// server's roots/list requests itself. While pause is set, it stops
// reading.
func (h *soakRig) read(pause func() bool) <-chan soakReply {
	replies := make(chan soakReply, 1<<16)
	go func() {
		defer close(replies)
		br := bufio.NewReaderSize(h.outR, 1<<16)
		for {
			for pause != nil && pause() {
				time.Sleep(time.Millisecond)
			}
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var rs []soakReply
			if line[0] == '[' {
				if err := json.Unmarshal(line, &rs); err != nil {
					h.t.Errorf("output line %q: %v", line, err)
				}
			} else {
				var r soakReply
				if err := json.Unmarshal(line, &r); err != nil {
					h.t.Errorf("output line %q: %v", line, err)
				}
				rs = []soakReply{r}
			}
			for _, r := range rs {
				if r.Method == "roots/list" {
					answer := `{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"roots":[]}}`
					if rand.IntN(2) == 0 {
						answer = "[" + answer + "]" // a batch of answers
					}
					go h.send(answer)
					continue
				}
				replies <- r
			}
		}
	}()
	return replies
}

// inFlight returns the transport's bookkeeping of requests in flight: how
// many, their bytes, and the other per-request maps' sizes (but for the
// empty id of a batch's notification, which the go-sdk keeps for good).
func (h *soakRig) inFlight() (n, bytes, other int) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	other = len(h.s.sizes) + len(h.s.listens) + len(h.s.asked) + len(h.s.inits) + len(h.s.batchIDs)
	if h.s.batchIDs[idKey{}] {
		other--
	}
	return len(h.s.pending), h.s.bytes, other
}

func soakCall(id int, tool string) string {
	return soakPadded(id, tool, 0)
}

// soakPadded is a call with pad bytes of padding in its arguments.
func soakPadded(id int, tool string, pad int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"n":%d,"pad":"%s"}}}`, id, tool, id, strings.Repeat("x", pad))
}

func soakCancel(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id)
}

// TestReview29SoakLongSession: a long session of many thousands of lines,
// interleaved: calls answered out of order, batches, pings, notifications,
// cancellations of calls that wait for them, lines refused (not JSON, not
// JSON-RPC), calls beyond the bound of
// requests in flight (some held by a handler that ignores its
// cancellation), calls that ask the client for its roots; the client stops
// reading the output for a while, so that the pipes fill, then reads again;
// the input ends with calls in flight, released after. Every call is
// answered exactly once, with its own id (an echo carries the n it was
// called with); every refused line gets its answer; the bookkeeping of
// requests in flight comes back to empty, and the goroutines and
// descriptors to their baselines.
func TestReview29SoakLongSession(t *testing.T) {
	heap := soakHeap()
	goroutines, fds := runtime.NumGoroutine(), soakFDs(t)
	h := newSoakRig(t, 64, 256<<10, 5*time.Second, nil)
	var paused sync.Mutex
	var pausing bool
	pause := func() bool { paused.Lock(); defer paused.Unlock(); return pausing }
	replies := h.read(pause)

	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{"roots":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := <-replies; string(r.ID) != "0" || r.Error != nil {
		t.Fatalf("the answer to initialize: %+v", r)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)

	// want[id] is the tool of the call with that id ("" for a ping, and
	// "bad" for a refused request answered with its id).
	want := map[int]string{}
	nulls := 0 // lines whose answer has a null id
	notificationBatch := false
	const hangs = 20
	var lines []string
	for id := 1; id <= hangs; id++ {
		lines = append(lines, soakCall(id, "hang"))
		want[id] = "hang"
	}
	var waits []int
	id := hangs + 1
	for len(lines) < 8000 {
		switch k := rand.IntN(40); {
		case k == 0:
			lines = append(lines, "["+soakCall(id, "echo")+","+soakCall(id+1, "echo")+","+soakCall(id+2, "echo")+"]")
			want[id], want[id+1], want[id+2] = "echo", "echo", "echo"
			id += 3
			continue
		case k == 1:
			lines = append(lines, "not json")
			nulls++
		case k == 2:
			lines = append(lines, fmt.Sprintf(`{"jsonrpc":"1.0","id":%d,"method":"ping"}`, id))
			want[id] = "bad"
		case k == 3:
			lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
			want[id] = ""
		case k == 4:
			lines = append(lines, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
			continue
		case k == 9:
			// The go-sdk keeps the empty id of a batch's notification
			// for good: the first such batch passes, the others are
			// refused with a null id.
			lines = append(lines, `[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`)
			if notificationBatch {
				nulls++
			}
			notificationBatch = true
			continue
		case k == 5 && len(waits) < 8:
			// A call that waits for its cancellation, sent later.
			lines = append(lines, soakCall(id, "wait"))
			want[id] = "wait"
			waits = append(waits, id)
		case k == 6 && len(waits) > 0:
			w := waits[0]
			waits = waits[1:]
			lines = append(lines, soakCancel(w))
			continue
		case k == 7:
			lines = append(lines, soakCall(id, "ask"))
			want[id] = "ask"
		case k == 8 && rand.IntN(10) == 0:
			// Past the bound of bytes whenever another is in flight.
			lines = append(lines, soakPadded(id, "echo", 300<<10))
			want[id] = "echo"
		case k < 20:
			lines = append(lines, soakPadded(id, "echo", rand.IntN(4096)))
			want[id] = "echo"
		default:
			lines = append(lines, soakCall(id, "echo"))
			want[id] = "echo"
		}
		id++
	}
	for _, w := range waits {
		lines = append(lines, soakCancel(w))
	}

	go func() {
		for i := 0; i < len(lines); i += 50 {
			if i == 2000 || i == 5000 {
				paused.Lock()
				pausing = true
				paused.Unlock()
				time.AfterFunc(300*time.Millisecond, func() {
					paused.Lock()
					pausing = false
					paused.Unlock()
				})
			}
			if !h.send(lines[i:min(i+50, len(lines))]...) {
				return
			}
		}
		// The input ends with the hanging calls in flight, while the
		// client does not read; the drain waits for their answers.
		paused.Lock()
		pausing = true
		paused.Unlock()
		time.AfterFunc(200*time.Millisecond, func() { close(h.release) })
		time.AfterFunc(400*time.Millisecond, func() {
			paused.Lock()
			pausing = false
			paused.Unlock()
		})
		h.wmu.Lock()
		h.inW.Close()
		h.wmu.Unlock()
	}()

	got := map[string][]soakReply{}
	gotNulls, busy := 0, 0
	timeout := time.After(20 * time.Second)
read:
	for {
		select {
		case r, ok := <-replies:
			if !ok {
				break read
			}
			if string(r.ID) == "null" || r.ID == nil {
				gotNulls++
				continue
			}
			got[string(r.ID)] = append(got[string(r.ID)], r)
		case <-timeout:
			t.Fatalf("the output did not end within 20 s (%d ids answered of %d)", len(got), len(want))
		}
	}
	select {
	case err := <-h.ran:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the output ended")
	}
	for id, tool := range want {
		rs := got[strconv.Itoa(id)]
		delete(got, strconv.Itoa(id))
		if len(rs) != 1 {
			t.Errorf("call %d (%s) answered %d times", id, tool, len(rs))
			continue
		}
		r := rs[0]
		switch {
		case r.Error != nil && r.Error.Code == codeBusy:
			busy++
		case tool == "bad":
			if r.Error == nil || r.Error.Code != codeInvalidRequest {
				t.Errorf("refused request %d: %+v, want -32600", id, r)
			}
		case tool == "echo":
			if r.Result == nil || len(r.Result.Content) != 1 || r.Result.Content[0].Text != strconv.Itoa(id) {
				t.Errorf("echo %d answered %+v", id, r)
			}
		case tool == "hang":
			if r.Result == nil || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "released" {
				t.Errorf("hang %d answered %+v", id, r)
			}
		}
	}
	for id, rs := range got {
		t.Errorf("answer with id %s, which no request had: %d times", id, len(rs))
	}
	if gotNulls != nulls {
		t.Errorf("%d answers with a null id, want %d", gotNulls, nulls)
	}
	if n, b, other := h.inFlight(); n != 0 || b != 0 || other != 0 {
		t.Errorf("after the session: %d requests in flight, %d bytes, %d entries in the other maps; want none", n, b, other)
	}
	t.Logf("%d lines, %d calls, %d refused as busy", len(lines), len(want), busy)
	h.inW.Close()
	h.outR.Close()
	soakSettle(t, goroutines, fds)
	lines, got = nil, nil
	if after := soakHeap(); after > heap+16<<20 {
		t.Errorf("heap after the session: %d MiB, baseline %d MiB", after>>20, heap>>20)
	}
}

// soakHeap returns the bytes of live heap objects after a collection.
func soakHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestReview29SoakStopInputOpen: a stop ends a long session whose input
// stays open, while the client pipes calls; once Run returns, every call
// was answered once, the bookkeeping is empty, and the goroutines and
// descriptors of the session (the transport's reading goroutine among
// them) are gone, though the client has not closed its end of the input.
func TestReview29SoakStopInputOpen(t *testing.T) {
	goroutines, fds := runtime.NumGoroutine(), soakFDs(t)
	stop := make(chan struct{})
	h := newSoakRig(t, 256, maxBytesInFlight, 5*time.Second, stop)
	replies := h.read(nil)
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := <-replies; string(r.ID) != "0" || r.Error != nil {
		t.Fatalf("the answer to initialize: %+v", r)
	}
	const n = 3000
	sent := make(chan int, 1)
	go func() {
		i := 1
		defer func() { sent <- i - 1 }()
		for ; i <= n; i++ {
			if i == n/2 {
				close(stop)
			}
			if !h.send(soakCall(i, "echo")) {
				return
			}
		}
	}()
	got := map[string]int{}
	for r := range replies {
		got[string(r.ID)]++
	}
	select {
	case err := <-h.ran:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the output ended")
	}
	for id, c := range got {
		if c != 1 {
			t.Errorf("id %s answered %d times", id, c)
		}
	}
	if n, b, other := h.inFlight(); n != 0 || b != 0 || other != 0 {
		t.Errorf("after the session: %d requests in flight, %d bytes, %d entries in the other maps; want none", n, b, other)
	}
	// The client keeps its input open until the session's goroutines are
	// gone, then closes it.
	t.Cleanup(func() { h.inW.Close() })
	h.outR.Close()
	soakSettle(t, goroutines, fds+1) // inW open
	<-sent
	t.Logf("%d answers", len(got))
}

// TestReview29SoakIsolateDescriptors: a session over the transport that
// Isolate returns (on the descriptors it duplicates) that ends when the
// client closes its input leaves no descriptor or goroutine behind.
func TestReview29SoakIsolateDescriptors(t *testing.T) {
	goroutines, fds := runtime.NumGoroutine(), soakFDs(t)
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	errf := logFile(t)
	tr, err := Isolate(&Options{Stdin: inR, Stdout: outW, Stderr: errf, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	ran := make(chan error, 1)
	go func() { ran <- server.Run(context.Background(), tr) }()
	const n = 2000
	go func() {
		var b strings.Builder
		b.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
		for i := 1; i <= n; i++ {
			if i%10 == 0 {
				b.WriteString("not json\n")
				continue
			}
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
		}
		_, _ = io.WriteString(inW, b.String())
		inW.Close()
	}()
	sc := bufio.NewScanner(outR)
	lines := 0
	for sc.Scan() {
		lines++
	}
	if lines != n+1 {
		t.Errorf("%d output lines, want %d", lines, n+1)
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the output ended")
	}
	for _, f := range []*os.File{inR, outR, outW, errf} {
		f.Close()
	}
	soakSettle(t, goroutines, fds)
}

// TestReview29ClientGoneEndsTheDrain: a client that exits while calls are
// under way closes both ends at once. The first answer the go-sdk then
// writes fails (EPIPE), and the SDK writes no other: it cancels the calls
// still running and drops their answers, which the transport still counts
// in flight. The drain at end of input must not wait for them until
// DrainTimeout: the SDK closes the transport once its calls are done,
// which ends the drain, and the session ends at once.
func TestReview29ClientGoneEndsTheDrain(t *testing.T) {
	goroutines, fds := runtime.NumGoroutine(), soakFDs(t)
	h := newSoakRig(t, maxInFlight, maxBytesInFlight, 5*time.Second, nil)
	replies := h.read(nil)
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := <-replies; string(r.ID) != "0" || r.Error != nil {
		t.Fatalf("the answer to initialize: %+v", r)
	}
	var lines []string
	for id := 1; id <= 20; id++ {
		lines = append(lines, soakCall(id, "slow"))
	}
	h.send(lines...)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if n, _, _ := h.inFlight(); n == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the calls did not pass")
		}
	}
	// The client exits: its ends of both pipes close.
	h.outR.Close()
	h.inW.Close()
	start := time.Now()
	select {
	case err := <-h.ran:
		if err != nil {
			t.Logf("Run: %v", err)
		}
	case <-time.After(9 * time.Second):
		t.Fatal("Run did not return")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Run returned %v after the client was gone, want well within DrainTimeout (5s)", d.Round(time.Millisecond))
	}
	if strings.Contains(h.logs.String(), "requests unanswered") {
		t.Errorf("log: %s", h.logs)
	}
	for range replies {
	}
	soakSettle(t, goroutines, fds)
}
