package gateway_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// review24bDownstream answers every tools/call with a result naming the
// tool, as a server that trusts everyone; it counts the calls it ran.
type review24bDownstream struct{ calls chan string }

func (d review24bDownstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if r.Method != http.MethodPost || json.Unmarshal(body, &msg) != nil || msg.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	select {
	case d.calls <- msg.Params.Name:
	default:
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"content":[]}}`)
}

// review24bGateway starts a gateway in front of a trusting downstream, both
// on loopback, and returns a function that calls tool with args as the
// demo viewer, giving the HTTP status and body.
func review24bGateway(t *testing.T, opts *gateway.Options) func(tool, args string) (int, string) {
	t.Helper()
	down := httptest.NewServer(review24bDownstream{calls: make(chan string, 64)})
	t.Cleanup(down.Close)
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := gateway.New(down.URL+"/mcp", gateway.DemoTokens(), opts)
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)
	id := 0
	return func(tool, args string) (int, string) {
		id++
		name, _ := json.Marshal(tool)
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":` + string(name) + `,"arguments":` + args + `}}`
		req, err := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer viewer-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

// TestReview24bGatewayToolLimitUnderAnotherSpelling: a limit for one tool
// (limiter.Limit.Tool) is matched by the exact name the call gives, while
// the policy takes every spelling of the name (policy.NameKey) for that
// tool, as a downstream that matches names leniently does: "SEARCH",
// "ſearch" or, for "İptal", Python's lower-casing "i\u0307ptal" run the
// capped tool at such a downstream, and must count against its cap.
func TestReview24bGatewayToolLimitUnderAnotherSpelling(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "search", Class: policy.Read},
			{Name: "\u0130ptal", Class: policy.Read},
		},
		Default: &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Tool: "search", Max: 1, Window: time.Hour},
		{Kind: limiter.Rate, Scope: limiter.User, Tool: "\u0130ptal", Max: 1, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := review24bGateway(t, &gateway.Options{Policy: pol, Limiter: lim})
	for _, tc := range [][]string{
		{"search", "SEARCH", "\u017fearch"},
		{"\u0130ptal", "i\u0307ptal", "I\u0307PTAL"},
	} {
		if st, body := call(tc[0], `{}`); st != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Fatalf("first call of %+q: %d %s", tc[0], st, body)
		}
		for _, name := range tc {
			if st, body := call(name, `{}`); st != http.StatusTooManyRequests {
				t.Errorf("%+q after %+q used its one call: %d %s, want 429: the downstream may run %+q", name, tc[0], st, body, tc[0])
			}
		}
	}
}

// TestReview24bGatewayCostUnderAnotherSpelling: Options.Cost is given the
// name as called. A name that equals a tool rule's name only under folding
// has that rule (see policy.Policy.Resolve) because a lenient downstream
// runs that tool; the library's pipeline then costs it the larger of the
// name's cost and the tool's (mcpguard.Options.Tools). The gateway asks
// Cost for the called spelling only, so a Cost that prices the tool by its
// name leaves "TRIGGER_REFUND" free, and the spend cap is not applied to
// the refund the downstream makes.
func TestReview24bGatewayCostUnderAnotherSpelling(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write}},
		WriteAllowlist: []string{"*"},
		Default:        &policy.ToolRule{Class: policy.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Spend, Scope: limiter.User, Max: 100, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := review24bGateway(t, &gateway.Options{Policy: pol, Limiter: lim, Cost: func(tool string, a policy.Args) float64 {
		if tool == "trigger_refund" {
			v, _ := a.Number("amount")
			return v
		}
		return 0
	}})
	if st, body := call("trigger_refund", `{"amount":500}`); st != http.StatusTooManyRequests {
		t.Fatalf("trigger_refund of 500 under a cap of 100: %d %s, want 429", st, body)
	}
	for _, name := range []string{"TRIGGER_REFUND", "Trigger_Refund"} {
		if st, body := call(name, `{"amount":500}`); st != http.StatusTooManyRequests {
			t.Errorf("%s of 500 under a cap of 100: %d %s, want 429: the downstream may run trigger_refund", name, st, body)
		}
	}
}
