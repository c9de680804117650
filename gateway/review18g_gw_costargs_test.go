package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestCostArgsOutliveTheCall: Options.Cost is given a view of the call's
// arguments, which the request body holds; the body is the gateway's
// pooled buffer, given back when the handler returns, and the next call's
// body is read into it. A Cost function that keeps args (to bill later, in
// another goroutine) must still read the call's own arguments once the
// handler has returned and other calls have come, never the next call's.
func TestCostArgsOutliveTheCall(t *testing.T) {
	down := httptest.NewServer(&downstream{})
	defer down.Close()
	var mu sync.Mutex
	var kept []policy.Args
	opts := &Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Cost: func(tool string, args policy.Args) float64 {
			mu.Lock()
			kept = append(kept, args)
			mu.Unlock()
			return 1
		},
	}
	g, err := New(down.URL+"/mcp", DemoTokens(), opts)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	for i := range n {
		amount := strings.Repeat(strconv.Itoa(i+1), 6)
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"id":"c1","amount":` + amount + `}}}`
		req := httptest.NewRequest(http.MethodPost, "http://gw/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer viewer-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("call %d: status %d: %s", i, w.Code, w.Body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(kept) != n {
		t.Fatalf("Cost was called %d times, want %d", len(kept), n)
	}
	for i, args := range kept {
		want := strings.Repeat(strconv.Itoa(i+1), 6)
		wantN, _ := strconv.ParseFloat(want, 64)
		if v, ok := args.Number("amount"); !ok || v != wantN {
			t.Errorf("call %d: args read late give amount %v (%v), want %v", i, v, ok, wantN)
		}
		if s, ok := args.(policy.ExactArgs).NumberText("amount"); !ok || s != want {
			t.Errorf("call %d: args read late give the text %q (%v), want %q", i, s, ok, want)
		}
	}
}
