package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review56Pings writes an initialize and n pings to w, then closes it.
func review56Pings(w io.WriteCloser, n int) {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
	}
	_, _ = io.WriteString(w, b.String())
	w.Close()
}

// TestReview56ServeTwiceRefused: a second Serve of the transport Isolate
// returned, while the first serves it (as a retry after ErrStopTimeout,
// whose session still runs, would), connected a second session to the
// same input: the two raced for its bytes (a data race in the reader, a
// line handed to both sessions or split between them). It is refused at
// once, and the first session serves every request.
func TestReview56ServeTwiceRefused(t *testing.T) {
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	tr, err := Isolate(&Options{Stdin: inR, Stdout: outW, Stderr: logFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	first := make(chan error, 1)
	go func() { first <- Serve(context.Background(), server, tr, time.Second, nil) }()
	second := make(chan error, 1)
	go func() { second <- Serve(context.Background(), server, tr, time.Second, nil) }()
	// Whichever came second is refused at once, before any input.
	var served chan error
	select {
	case err := <-second:
		served = first
		if err == nil {
			t.Fatal("a second Serve of one transport returned nil, want an error")
		}
		t.Logf("second Serve: %v", err)
	case err := <-first:
		served = second
		if err == nil {
			t.Fatal("a second Serve of one transport returned nil, want an error")
		}
		t.Logf("second Serve: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("neither Serve was refused: two sessions serve one transport")
	}
	const n = 300
	go review56Pings(inW, n)
	seen := map[string]int{}
	sc := bufio.NewScanner(outR)
	for len(seen) < n+1 && sc.Scan() {
		var m struct {
			ID    json.RawMessage
			Error *struct{ Code int }
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Error != nil {
			t.Fatalf("output line %q: %v", sc.Bytes(), err)
		}
		seen[string(m.ID)]++
	}
	for i := 0; i <= n; i++ {
		if c := seen[fmt.Sprint(i)]; c != 1 {
			t.Errorf("request %d answered %d times, want once", i, c)
		}
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return at the end of input")
	}
}

// TestReview56TwoSessionsShareNoBytes: two sessions connected to one
// transport by other means than Serve (server.Run twice, say) read its
// input through one reader; its Read was not safe for concurrent use (a
// data race on the lines passed, which could hand one line to both
// sessions: a request run twice). Each line now goes to one session at
// most, and -race finds no race.
func TestReview56TwoSessionsShareNoBytes(t *testing.T) {
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	tr, err := Isolate(&Options{Stdin: inR, Stdout: outW, Stderr: logFile(t), DrainTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	ran := make(chan error, 2)
	for range 2 {
		go func() {
			ss, err := server.Connect(context.Background(), tr, nil)
			if err != nil {
				ran <- err
				return
			}
			ran <- ss.Wait()
		}()
	}
	const n = 300
	go review56Pings(inW, n)
	seen := map[string]int{}
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	for range 2 {
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatal("the sessions did not end at the end of input")
		}
	}
	outW.Close() // the transport's copy is closed by the sessions
	for line := range lines {
		var m struct{ ID json.RawMessage }
		if json.Unmarshal(line, &m) == nil && m.ID != nil && string(m.ID) != "null" {
			seen[string(m.ID)]++
		}
	}
	for id, c := range seen {
		if c > 1 {
			t.Errorf("request %s answered %d times: one line went to both sessions", id, c)
		}
	}
}
