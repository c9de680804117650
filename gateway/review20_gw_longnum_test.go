package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestCostReadsLongNumbers: Options.Cost reads the arguments' numbers as
// their value, for a downstream in any language. strconv.ParseFloat
// misreads a number with more than 800 digits before its point: "1", 1000
// zeros, "e-990" is 1e10, which it read as 1e-191, so a refund of 1e10
// cost next to nothing against the spend caps while a Python downstream
// paid out 1e10.
func TestCostReadsLongNumbers(t *testing.T) {
	down := httptest.NewServer(&downstream{})
	defer down.Close()
	var mu sync.Mutex
	var got []float64
	opts := &Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Cost: func(tool string, args policy.Args) float64 {
			v, ok := args.Number("amount")
			if !ok {
				v = -1
			}
			mu.Lock()
			got = append(got, v)
			mu.Unlock()
			return 1
		},
	}
	g, err := New(down.URL+"/mcp", DemoTokens(), opts)
	if err != nil {
		t.Fatal(err)
	}
	zeros := strings.Repeat("0", 1000)
	amounts := []string{"1" + zeros + "e-990", "-25" + zeros + "e-1000", "1" + zeros + "e-400"}
	want := []float64{1e10, -25, -1} // the last is 1e600: no float64
	for i, amount := range amounts {
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
	if len(got) != len(want) {
		t.Fatalf("Cost was called %d times, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("amount %.20s... (%d bytes): Cost read %v, want %v", amounts[i], len(amounts[i]), got[i], want[i])
		}
	}
}
