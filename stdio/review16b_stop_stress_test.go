package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStopUnderLoad: a client pipes calls (alone and in batches, with
// pings and cancellations among them) without pause and keeps its input
// open, and the server is stopped at a random moment while they run. Each
// call is answered at most once; one that started is answered, and not
// with -32004; one answered -32004 never started; after the last answer
// the output ends and Run returns nil. The stop races the reading
// goroutine, the drain and the go-sdk's writes (run with -race).
func TestStopUnderLoad(t *testing.T) {
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	stop := make(chan struct{})
	tr, err := Isolate(&Options{Stdin: inR, Stdout: outW, Stderr: logFile(t), DrainTimeout: 20 * time.Second, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	started := map[int]bool{}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "work", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ N int }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			mu.Lock()
			started[args.N] = true
			mu.Unlock()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(rand.IntN(3000)) * time.Microsecond):
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	ran := make(chan error, 1)
	go func() { ran <- server.Run(context.Background(), tr) }()

	type reply struct {
		ID    json.RawMessage
		Error *struct{ Code int }
	}
	replies := make(chan reply, 1<<16)
	go func() {
		defer close(replies)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var rs []reply
			if b := sc.Bytes(); len(b) > 0 && b[0] == '[' {
				_ = json.Unmarshal(b, &rs)
			} else {
				var r reply
				_ = json.Unmarshal(b, &r)
				rs = []reply{r}
			}
			for _, r := range rs {
				replies <- r
			}
		}
	}()
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if r := <-replies; string(r.ID) != "0" || r.Error != nil {
		t.Fatalf("the answer to initialize: %+v", r)
	}

	const n = 3000
	call := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"work","arguments":{"n":%d}}}`, id, id)
	}
	go func() {
		// Errors are expected once the session has ended and the test
		// closes the pipe.
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n")
		for id := 1; id <= n; {
			var line string
			switch k := rand.IntN(20); {
			case k == 0 && id+3 <= n:
				line = "[" + call(id) + "," + call(id+1) + "," + call(id+2) + "]"
				id += 3
			case k == 1:
				line = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.Itoa(max(1, id-5)) + `}}`
			default:
				line = call(id)
				id++
			}
			if _, err := io.WriteString(inW, line+"\n"); err != nil {
				return
			}
		}
	}()
	time.Sleep(time.Duration(5+rand.IntN(40)) * time.Millisecond)
	close(stop)

	got := map[string]int{}   // id -> answers
	closing := map[int]bool{} // ids answered -32004
	timeout := time.After(30 * time.Second)
read:
	for {
		select {
		case r, ok := <-replies:
			if !ok {
				break read
			}
			got[string(r.ID)]++
			if r.Error != nil && r.Error.Code == codeClosing {
				id, err := strconv.Atoi(string(r.ID))
				if err != nil {
					t.Fatalf("-32004 with id %s", r.ID)
				}
				closing[id] = true
			}
		case <-timeout:
			t.Fatalf("the output did not end within 30 s of the stop (%d answers)", len(got))
		}
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run after the stop: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the output ended")
	}
	mu.Lock()
	defer mu.Unlock()
	for id, c := range got {
		if c > 1 {
			t.Errorf("id %s answered %d times", id, c)
		}
	}
	for id := range started {
		switch {
		case got[strconv.Itoa(id)] == 0:
			t.Errorf("call %d started and was not answered", id)
		case closing[id]:
			t.Errorf("call %d started and was answered -32004", id)
		}
	}
	if len(closing) == 0 || len(started) == 0 {
		t.Logf("no call refused or none started (%d started, %d refused): the stop came at an edge", len(started), len(closing))
	}
	t.Logf("%d started, %d refused, %d answers", len(started), len(closing), len(got))
}
