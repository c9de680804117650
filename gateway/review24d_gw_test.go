package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview24dBatchOfSpellings: a batch calling one tool under several
// spellings of its name is charged from the tool's one budget, member by
// member: a rate of one call lets one member through, whichever spelling it
// has, and a call of another spelling is charged the price Cost gives the
// tool's name, against the tool's spend. Each outcome record names the tool
// as called, with the cost charged (none for the refused).
func TestReview24dBatchOfSpellings(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "search", Class: policy.Read}, {Name: "pay", Class: policy.Write}},
		WriteAllowlist: []string{"*"},
		Default:        &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Tool: "search", Max: 1, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "pay", Max: 100, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var records []string
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		if e.Phase == audit.PhaseOutcome {
			mu.Lock()
			b, _ := json.Marshal([]any{e.Tool, e.Code, e.Cost})
			records = append(records, string(b))
			mu.Unlock()
		}
		return nil
	})
	down := httptest.NewServer(review24bDownstream{calls: make(chan string, 64)})
	defer down.Close()
	g, err := gateway.New(down.URL+"/mcp", gateway.DemoTokens(), &gateway.Options{
		Policy: pol, Limiter: lim, Audit: sink, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Cost: func(tool string, a policy.Args) float64 {
			if tool == "pay" {
				v, _ := a.Number("amount")
				return v
			}
			return 0
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()
	post := func(body string) string {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer admin-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	call := func(id int, name, args string) string {
		n, _ := json.Marshal(name)
		return `{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"tools/call","params":{"name":` + string(n) + `,"arguments":` + args + `}}`
	}
	body := post("[" + call(1, "SEARCH", `{}`) + "," + call(2, "search", `{}`) + "," + call(3, "\u017fearch", `{}`) + "," +
		call(4, "PAY", `{"amount":60}`) + "," + call(5, "pay", `{"amount":60}`) + "," + call(6, "Pay", `{"amount":40}`) + "]")
	var answers []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &answers); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var passed []int
	for _, a := range answers {
		if a.Result != nil {
			passed = append(passed, a.ID)
		}
	}
	slices.Sort(passed)
	if !slices.Equal(passed, []int{1, 4, 6}) {
		t.Errorf("members answered with a result: %v, want [1 4 6] (one search, 60 then 40 of pay's 100): %s", passed, body)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(records)
	want := []string{`["PAY","",60]`, `["Pay","",40]`, `["SEARCH","",0]`, `["pay","SPEND_LIMIT_EXCEEDED",0]`,
		`["search","RATE_LIMIT_EXCEEDED",0]`, `["ſearch","RATE_LIMIT_EXCEEDED",0]`}
	if !slices.Equal(records, want) {
		t.Errorf("outcome records (tool, code, cost):\n got %q\nwant %q", records, want)
	}
}
