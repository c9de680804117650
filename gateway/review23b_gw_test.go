package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// nilBodyTransport answers every request as a mock Transport often does:
// a status, a header, and a nil Body (or, with nilResp, no response and
// no error).
type nilBodyTransport struct {
	nilResp bool
	length  int64 // the answer's ContentLength
}

func (t nilBodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	if t.nilResp {
		return nil, nil
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		ContentLength: t.length, Request: r}, nil
}

// TestReview23bNilBodyTransport: a custom Transport whose answer has a nil
// Body (net/http's Client reads it as empty, as mock Transports in the
// wild assume, unless its ContentLength is positive), or that returns
// neither a response nor an error, fails the call like any bad answer: the call gives back its in-flight place
// and gets one outcome record. The gateway read the nil Body, and the
// panic kept the place for good (every later call of the caller 429) or,
// in a batch, ended the process.
func TestReview23bNilBodyTransport(t *testing.T) {
	for _, kind := range []string{"nil_body", "nil_body_with_length", "nil_response"} {
		for _, batch := range []bool{false, true} {
			nilResp := kind == "nil_response"
			var length int64
			if kind == "nil_body_with_length" {
				length = 42
			}
			name := kind
			if batch {
				name += "_batch"
			}
			t.Run(name, func(t *testing.T) {
				lim := oneInFlight(t)
				sink := &codeSink{}
				rg := newRig(t, &Options{Limiter: lim, Audit: sink, Transport: nilBodyTransport{nilResp: nilResp, length: length}})
				for i := range 2 {
					body := call(`1`, "get_customer_record", "")
					if batch {
						body = "[" + body + "]"
					}
					req, err := http.NewRequest(http.MethodPost, rg.url+"/mcp", strings.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Authorization", viewer)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatalf("call %d: %v (the handler panicked)", i, err)
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if strings.Contains(string(b), "CONCURRENCY_LIMIT_EXCEEDED") || resp.StatusCode == http.StatusTooManyRequests {
						t.Fatalf("call %d: %d %s: the first call kept its in-flight place", i, resp.StatusCode, b)
					}
					if (kind != "nil_body" || batch) && !strings.Contains(string(b), `"code":-32`) {
						t.Errorf("call %d: %d %s, want an error answer", i, resp.StatusCode, b)
					}
				}
				deadline := time.Now().Add(2 * time.Second)
				for {
					n := len(sink.all())
					if n >= 2 || time.Now().After(deadline) {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				codes := sink.all()
				// An empty 200 relayed as it came (a single call without
				// pins) is the downstream's answer; anything else fails.
				want := "UPSTREAM_UNAVAILABLE"
				if kind == "nil_body" && !batch {
					want = ""
				}
				if len(codes) != 2 || codes[0] != want || codes[1] != want {
					t.Errorf("outcome codes %q, want %q for each call", codes, want)
				}
			})
		}
	}
}

// TestReview23bRequiredRolesDuplicated: a role named twice in a rule's
// list (policy.New keeps it) does not hide what the caller lacks. With
// admin_audit's own rule listing admin twice and the admin_* role rule
// admin, each set implied the other and both were dropped: the refusal
// said only "caller lacks a required role", with no required_roles.
func TestReview23bRequiredRolesDuplicated(t *testing.T) {
	for _, tc := range []struct {
		name  string
		roles []string
		msg   string
		data  map[string]any
	}{
		{"same_set", []string{"admin", "admin"}, "requires role admin,",
			map[string]any{"required_roles": []any{"admin"}}},
		{"superset", []string{"ops", "ops", "admin"}, "requires role admin,",
			map[string]any{"required_roles": []any{"admin"}}},
		{"other_set", []string{"ops", "ops"}, "requires role ops and role admin,",
			map[string]any{"required_role_sets": []any{[]any{"ops"}, []any{"admin"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultPolicyConfig()
			cfg.Tools = []policy.ToolRule{{Name: "admin_audit", Class: policy.Read, Roles: tc.roles}}
			rg := seedRig(t, `{"tok-v":{"sub":"v","role":"viewer"}}`, cfg)
			got := rg.post(t, "Bearer tok-v", call(`1`, "admin_audit", `{}`))
			if got.status != http.StatusForbidden {
				t.Fatalf("status %d, want 403: %s", got.status, got.body)
			}
			want := "Unauthorized Tool Call: tool 'admin_audit' " + tc.msg + " caller has role 'viewer'."
			if msg := denialMessage(t, got.body); msg != want {
				t.Errorf("message = %q, want %q", msg, want)
			}
			_, _, data := rpcErr(t, got.body)
			for _, k := range []string{"required_roles", "required_role_sets"} {
				if diff := cmp.Diff(tc.data[k], data[k]); diff != "" {
					t.Errorf("data.%s (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

// TestReview23bBrokenArgsInBatch: with Cost, an argument limit and a rate
// cap all set, a batch member whose arguments name a field twice under
// folding is refused alone (-32602 for a tool without a limit, the limit's
// refusal for one with it), recorded once with cost 0, and takes neither a
// call of the rate cap nor an in-flight place: the members around it are
// forwarded and charged.
func TestReview23bBrokenArgsInBatch(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "refund", Class: policy.Read, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}}}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Max: 16},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 100, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var recs []audit.Event
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		recs = append(recs, *e)
		return nil
	})
	var priced sync.Map
	rg := newRig(t, &Options{Policy: pol, Limiter: lim, Audit: sink, Cost: func(tool string, a policy.Args) float64 {
		v, _ := a.Number("amount")
		priced.Store(v, true)
		return v
	}})
	body := `[` + call(`1`, "get_customer_record", `{"amount":3}`) + `,` +
		call(`2`, "get_customer_record", `{"amount":1,"AMOUNT":50}`) + `,` +
		call(`3`, "refund", `{"amount":1,"Amount":500}`) + `,` +
		call(`4`, "refund", `{"amount":4}`) + `]`
	got := rg.post(t, viewer, body)
	if got.status != http.StatusOK {
		t.Fatalf("status %d: %s", got.status, got.body)
	}
	for _, want := range []string{`"id":1,"result"`, `"id":2,"error":{"code":-32602`, `"id":3,"error":{"code":-32001`, `"id":4,"result"`} {
		if !strings.Contains(got.body, want) {
			t.Errorf("batch answer %s, want %s", got.body, want)
		}
	}
	if n := len(rg.down.log()); n != 2 {
		t.Errorf("%d members forwarded, want 2", n)
	}
	if _, ok := priced.Load(float64(50)); ok {
		t.Error("Cost priced the ambiguous member")
	}
	mu.Lock()
	var costs []float64
	codes := map[string]int{}
	for _, e := range recs {
		codes[e.Code]++
		costs = append(costs, e.Cost)
	}
	mu.Unlock()
	if len(recs) != 4 || codes[""] != 2 || codes["INVALID_ARGUMENTS"] != 1 || codes["FORBIDDEN"] != 1 {
		t.Errorf("records %v (costs %v), want 2 allowed, 1 INVALID_ARGUMENTS, 1 FORBIDDEN", codes, costs)
	}
	// The rate cap of 2 calls was charged only by the forwarded members.
	if r := rg.post(t, viewer, call(`5`, "get_customer_record", `{"amount":1}`)); r.status != http.StatusTooManyRequests {
		t.Errorf("third allowed call: status %d, want 429 (two calls charged): %s", r.status, r.body)
	}
}
