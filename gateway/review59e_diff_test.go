package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// review59eOutcome classes a decision: "allowed" (the handler or the
// downstream got the call) or the class of a refusal.
type review59eOutcome string

// review59ePrincipals are the callers, by token.
var review59ePrincipals = map[string]*policy.Principal{
	"viewer":   {Subject: "v", Roles: []string{"viewer"}},
	"support":  {Subject: "s", Roles: []string{"support"}},
	"Support":  {Subject: "S", Roles: []string{"Support"}},
	"finance":  {Subject: "f", Roles: []string{"finance"}},
	"FINANCE":  {Subject: "F", Roles: []string{"FINANCE"}},
	"admin":    {Subject: "a", Roles: []string{"admin"}},
	"adminsup": {Subject: "as", Roles: []string{"admin", "support"}},
	"ADMIN":    {Subject: "A", Roles: []string{"ADMIN"}},
	"none":     {Subject: "n"},
}

// review59eRoot is the library's guard installed on a go-sdk server,
// served stateless over Streamable HTTP.
type review59eRoot struct {
	url  string
	mu   sync.Mutex
	runs map[string]int // by tool name
	args map[string]string
}

func review59eCode(s string) review59eOutcome {
	switch s {
	case "TOOL_NOT_FOUND":
		return "notfound"
	case "FORBIDDEN":
		return "forbidden"
	case "WRITE_NOT_ALLOWED":
		return "write"
	case "INVALID_ARGUMENTS":
		return "invalid"
	case "CONFIRMATION_REQUIRED":
		return "confirm"
	case "INVALID_REQUEST":
		return "malformed" // a body that is not JSON
	case "SPEND_LIMIT_EXCEEDED", "RATE_LIMIT_EXCEEDED":
		return "limit"
	}
	return review59eOutcome("other:" + s)
}

func newReview59eRoot(t *testing.T, pol *policy.Policy, names []string) *review59eRoot {
	return newReview59eRootLim(t, pol, names, nil)
}

func newReview59eRootLim(t *testing.T, pol *policy.Policy, names []string, lim *limiter.Limiter) *review59eRoot {
	t.Helper()
	r := &review59eRoot{runs: map[string]int{}, args: map[string]string{}}
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(_ context.Context, req mcp.Request) (*mcpguard.Identity, error) {
		ex := req.GetExtra()
		if ex == nil || ex.Header == nil {
			return nil, mcpguard.ErrUnauthenticated
		}
		p := review59ePrincipals[strings.TrimPrefix(ex.Header.Get("Authorization"), "Bearer ")]
		if p == nil {
			return nil, mcpguard.ErrUnauthenticated
		}
		return &mcpguard.Identity{Principal: p}, nil
	})
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Confirmer: signer, NoWriteAhead: true, Limiter: lim, Logger: discardLogger(),
		Validation: &mcpguard.ValidationOptions{Lenient: review59eLenient}})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "root", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"},` +
		`"note":{"type":"string"},"meta":{"type":"object"},"seats":{"type":"number"},"kilos":{"type":"number"}}}`)
	for _, name := range names {
		tool := &mcp.Tool{Name: name, InputSchema: schema}
		if rule, _ := pol.Resolve(name); rule.Class == policy.Read {
			tool.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
		}
		srv.AddTool(tool, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r.mu.Lock()
			r.runs[req.Params.Name]++
			r.args[req.Params.Name] = string(req.Params.Arguments)
			r.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	r.url = hs.URL
	return r
}

func review59ePost(t *testing.T, url, who, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+who)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (r *review59eRoot) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.runs {
		n += v
	}
	return n
}

func (r *review59eRoot) call(t *testing.T, who, params string) (review59eOutcome, string) {
	before := r.total()
	status, body := review59ePost(t, r.url, who, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`)
	ran := r.total() > before
	var m struct {
		Result *struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			} `json:"structuredContent"`
		} `json:"result"`
		Error *struct {
			Code int `json:"code"`
			Data struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		if status == http.StatusBadRequest && strings.HasPrefix(body, "malformed payload") {
			return "malformed", body
		}
		return review59eOutcome("other:http" + strconv.Itoa(status)), body
	}
	switch {
	case ran && m.Result != nil && !m.Result.IsError:
		return "allowed", body
	case ran:
		return "other:ran-but-refused", body
	case m.Result != nil && m.Result.IsError:
		return review59eCode(m.Result.StructuredContent.Error.Code), body
	case m.Error != nil && m.Error.Data.Code != "":
		return review59eCode(m.Error.Data.Code), body
	case m.Error != nil && m.Error.Code == -32602 && strings.Contains(body, "unknown tool"):
		return "notfound", body
	case m.Error != nil:
		return review59eOutcome("other:rpc" + strconv.Itoa(m.Error.Code)), body
	}
	return "other:?", body
}

// review59eGate is the gateway in front of a downstream that records what
// it receives.
type review59eGate struct {
	url  string
	mu   sync.Mutex
	got  []string
	down *httptest.Server
}

func newReview59eGate(t *testing.T, pol *policy.Policy) *review59eGate {
	return newReview59eGateLim(t, pol, nil)
}

func newReview59eGateLim(t *testing.T, pol *policy.Policy, lim *limiter.Limiter) *review59eGate {
	t.Helper()
	gt := &review59eGate{}
	gt.down = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gt.mu.Lock()
		gt.got = append(gt.got, string(b))
		gt.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ran"}]}}`)
	}))
	t.Cleanup(gt.down.Close)
	auth := AuthenticatorFunc(func(_ context.Context, tok string) (*policy.Principal, error) {
		if p := review59ePrincipals[tok]; p != nil {
			return p, nil
		}
		return nil, errors.New("unknown token")
	})
	g, err := New(gt.down.URL+"/mcp", auth, &Options{Policy: pol, Limiter: lim, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(g)
	t.Cleanup(gs.Close)
	gt.url = gs.URL + "/mcp"
	return gt
}

func (gt *review59eGate) call(t *testing.T, who, params string) (review59eOutcome, string) {
	gt.mu.Lock()
	before := len(gt.got)
	gt.mu.Unlock()
	status, body := review59ePost(t, gt.url, who, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`)
	gt.mu.Lock()
	ran := len(gt.got) > before
	gt.mu.Unlock()
	if ran {
		return "allowed", body
	}
	var m struct {
		Error *struct {
			Code int `json:"code"`
			Data struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &m) != nil || m.Error == nil {
		return review59eOutcome("other:http" + strconv.Itoa(status)), body
	}
	switch {
	case m.Error.Code == -32029:
		return "limit", body
	case m.Error.Code == -32601:
		return "notfound", body
	case m.Error.Code == -32602 || m.Error.Code == -32600:
		return "invalid", body
	case m.Error.Data.Code != "":
		return review59eCode(m.Error.Data.Code), body
	}
	return review59eOutcome("other:rpc" + strconv.Itoa(m.Error.Code)), body
}

// review59ePolicies are the policies both sides enforce.
func review59ePolicies(t *testing.T) map[string]*policy.Policy {
	zero := 0.0
	tools := func() []policy.ToolRule {
		return []policy.ToolRule{
			{Name: "get_customer_record", Class: policy.Read},
			{Name: "trigger_refund", Class: policy.Write, Roles: []string{"support", "finance"},
				ArgLimits: []policy.ArgLimit{{Field: "amount", Min: &zero, Max: 100, ExemptRoles: []string{"finance"}}}},
			{Name: "admin_reset_key", Class: policy.Write},
			{Name: "delete_account", Class: policy.Write},
			{Name: "wire_money", Class: policy.Write, Confirm: true},
			{Name: "lookup", Class: policy.Read, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}},
			{Name: "book", Class: policy.Read, ArgLimits: []policy.ArgLimit{{Field: "seats", Max: 5, Min: &zero}, {Field: "kilos", Max: 5}}},
		}
	}
	roles := []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}}
	allow := []string{"trigger_refund", "admin_reset_key", "wire_money"}
	out := map[string]*policy.Policy{}
	for name, cfg := range map[string]policy.Config{
		"nodefault":     {Tools: tools(), RoleRules: roles, WriteAllowlist: allow},
		"showforbidden": {Tools: tools(), RoleRules: roles, WriteAllowlist: allow, ShowForbidden: true},
		"defaultread":   {Tools: tools(), RoleRules: roles, WriteAllowlist: allow, Default: &policy.ToolRule{Class: policy.Read}},
		"defaultlimits": {Tools: tools(), RoleRules: append(roles, policy.RoleRule{Pattern: "get_customer_record", Roles: []string{"support"}}),
			WriteAllowlist: []string{"trigger_refund", "TRIGGER_REFUND", "admin_reset_key"},
			Default:        &policy.ToolRule{Class: policy.Read, ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 10}}}},
		"defaultwrite": {Tools: tools(), RoleRules: roles, WriteAllowlist: []string{"*"},
			Default: &policy.ToolRule{Class: policy.Write, Roles: []string{"support", "admin"}}},
	} {
		p, err := policy.New(cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = p
	}
	return out
}

var review59eNames = []string{
	"get_customer_record", "GET_CUSTOMER_RECORD", "get-customer-record",
	"trigger_refund", "Trigger_Refund", "TRIGGER_REFUND", "trigger-refund", "trıgger_refund",
	"trİgger_refund", "trigger_refund ", "trigger_refund\u0000", "trigger_refund\u0000x",
	"admin_reset_key", "ADMIN_RESET_KEY", "admın_reset_key", "admin_reset_\u212aey", "admin_re\u017fet_key",
	"admin-reset-key", "Admin_Reset_Key", "delete_account", "DELETE_ACCOUNT", "wire_money", "WIRE_MONEY",
	"lookup", "LOOKUP", "\u017fookup", "unknown_tool", "", " ", "lookup\t",
	"trigger\u00adrefund", "trigger_refund\u200b", "trigger_refund\ufe0f", "ｔrigger_refund",
	"admin_reset_key\u034f", "a\u0307dmin_reset_key", "admİn_reset_key", "book", "BOOK", "Book", "booK",
	"get_customer_record", "Get_Customer_Record", "get_customer_recor\u0064",
}

var review59eArgs = []string{
	``, `null`, `{}`, `[]`, `5`, `"x"`, `true`,
	`{"amount":50}`, `{"amount":100}`, `{"amount":101}`, `{"amount":1e2}`, `{"amount":100.0}`,
	`{"amount":-0}`, `{"amount":1E+2}`, `{"amount":1e400}`, `{"amount":1e-400}`, `{"amount":-1e-400}`,
	`{"amount":100.000000000000001}`, `{"amount":99.9999999999999999999}`, `{"amount":-1}`,
	`{"amount":0.0}`, `{"amount":1e-2}`, `{"amount":10000000000000000000000}`,
	`{"amount":"50"}`, `{"amount":null}`, `{"amount":true}`, `{"amount":[50]}`, `{"amount":{"v":50}}`,
	`{"note":"x"}`, `{"amount":50,"amount":500}`, `{"amount":500,"amount":50}`,
	`{"Amount":50}`, `{"Amount":500}`, `{"amount":50,"Amount":500}`, `{"amount":50,"AMOUNT":500}`,
	`{"amount":50,"a_mount":500}`, `{"amount":50,"a-mount":500}`, `{"amount":50,"\u0061mount":500}`,
	`{"amount":50,"amount\u0000":500}`, `{"amount":50,"amount\u0000x":500}`, `{"amount\u0000":50}`,
	`{"amount":50,"meta":{"amount":500}}`, `{"meta":{"amount":50}}`, `{"amount":50,"meta":{"a":1,"A":2}}`,
	`{"amount":50,"note":"\ud800"}`, `{"amount":50,"AMOUNT":50}`, `{"amount":50,"\u212amount":1}`,
	`{"amount":50,"extra":1}`, `{"am\u006funt":500}`, `{"amount":50,"amount\u200b":500}`,
	`{"amount":50,"ﬀ":1}`, `{"amount":0x10}`, `{"amount":50 }`, `{ "amount" : 50 }`,
	`{"seats":1,"kilos":1}`, `{"seats":1,"kilos":1,"\u017feats":9}`, `{"seats":1,"kilos":1,"\u212ailos":9}`,
	`{"seats":1,"\u212ailos":1}`, `{"\u017feats":1,"kilos":1}`, `{"seats":9,"kilos":1}`, `{"seats":1,"kilos":9}`,
	`{"seats":1,"kilos":1,"SEATS":9}`, `{"seats":1,"kilos":1,"s_eats":9}`, `{"seats":1,"kilos":1,"seats\u0000":9}`,
	`{"amount":5,"seats":1,"kilos":1}`, `{"amount":50,"seats":1,"kilos":1}`,
	`{"amount":1e-999999999}`, `{"amount":-1e-999999999}`, `{"amount":1e999999999}`, `{"amount":-0e999999999}`,
	`{"amount":100e-999999999}`, `{"amount":0.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001}`,
	`{"amount":-0.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001}`,
	`{"amount":1000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000e-134}`,
	`{"amount":-1e-401}`, `{"amount":1e-401}`, `{"amount":100.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001}`,
}

// review59eRun drives both sides with every case and returns the
// disagreements.
func review59eRun(t *testing.T, polName string, pol *policy.Policy, who []string, names, args []string) []string {
	var registered []string
	for _, n := range names {
		if policy.CheckName(n) != nil || n == "" {
			continue
		}
		if _, ok := pol.Resolve(n); ok {
			registered = append(registered, n)
		}
	}
	root := newReview59eRoot(t, pol, registered)
	gate := newReview59eGate(t, pol)
	var diffs []string
	for _, w := range who {
		for _, n := range names {
			nameJSON, _ := json.Marshal(n)
			for _, a := range args {
				params := `{"name":` + string(nameJSON)
				if a != "" {
					params += `,"arguments":` + a
				}
				params += `}`
				ro, rb := root.call(t, w, params)
				go_, gb := gate.call(t, w, params)
				if !review59eAgree(ro, go_) {
					diffs = append(diffs, polName+" who="+w+" params="+params+" root="+string(ro)+" gateway="+string(go_)+
						"\n    root: "+review59eCut(rb)+"\n    gate: "+review59eCut(gb))
				}
			}
		}
	}
	return diffs
}

func review59eCut(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// review59eLenient runs the library's guard with lenient validation.
var review59eLenient = false

// review59eAgree reports whether two outcomes are the same decision, or a
// difference the package docs explain: the gateway refuses a malformed
// envelope (a name policy.CheckName refuses, arguments not an object or
// holding a lone surrogate) before the policy decides, where the library's
// guard answers an unknown tool or a policy refusal first; and the library
// validates arguments against the tool's schema (INVALID_ARGUMENTS, before
// the argument limits), which the gateway, judging by the policy alone,
// leaves to its downstream.
func review59eAgree(root, gate review59eOutcome) bool {
	switch {
	case root == gate:
		return true
	case gate == "invalid" && root != "allowed":
		return true
	case root == "invalid":
		return true
	}
	return false
}

// TestReview59eGuardAndGatewayAgree drives the library's guard (Install on
// a go-sdk server over Streamable HTTP) and the gateway (in front of a
// recording downstream) with the same policy, callers and tools/calls:
// tool names in other cases, under Unicode folding, with delimiters,
// spaces, NUL and invisible characters; limited arguments in odd number
// spellings, as strings, missing, null, named twice or in another case,
// nested, with a NUL; arguments empty or not an object. Each call must be
// allowed by both or refused by both, for the same reason but where the
// docs explain the difference (review59eAgree).
func TestReview59eGuardAndGatewayAgree(t *testing.T) {
	for _, lenient := range []bool{false, true} {
		review59eLenient = lenient
		pols := review59ePolicies(t)
		if lenient {
			pols = map[string]*policy.Policy{"nodefault": pols["nodefault"], "defaultlimits": pols["defaultlimits"]}
		}
		for name, pol := range pols {
			var diffs []string
			diffs = append(diffs, review59eRun(t, name, pol, []string{"viewer", "support", "finance", "ADMIN", "adminsup"},
				review59eNames, []string{`{}`, `{"amount":50}`})...)
			diffs = append(diffs, review59eRun(t, name, pol, []string{"support", "finance"},
				[]string{"trigger_refund", "TRIGGER_REFUND", "book"}, review59eArgs)...)
			for _, d := range diffs {
				t.Errorf("lenient=%v: %s", lenient, d)
			}
		}
	}
	review59eLenient = false
}

// TestReview59eSpendAgrees runs sequences of calls, by names that fold
// onto a rule's and others the default rule governs, through fresh spend
// limiters on both sides: each call must be allowed or refused alike (a
// name folding onto a rule's is charged the larger cost on both).
func TestReview59eSpendAgrees(t *testing.T) {
	zero := 0.0
	cfg := policy.Config{
		Tools: []policy.ToolRule{
			{Name: "trigger_refund", Class: policy.Write, Cost: 3, Roles: []string{"support", "finance"},
				ArgLimits: []policy.ArgLimit{{Field: "amount", Min: &zero, Max: 100, ExemptRoles: []string{"finance"}}}},
			{Name: "lookup", Class: policy.Read, Cost: 1},
			{Name: "free", Class: policy.Read},
		},
		WriteAllowlist: []string{"*"},
		Default:        &policy.ToolRule{Class: policy.Read, Cost: 2},
	}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"trigger_refund", "TRIGGER_REFUND", "lookup", "LOOKUP", "free", "FREE", "other", "\u017fookup"}
	var seqs [][]string
	for _, a := range names {
		for _, b := range names {
			seqs = append(seqs, []string{a, b, b})
		}
	}
	for _, who := range []string{"support", "finance", "viewer"} {
		for _, seq := range seqs {
			mk := func() *limiter.Limiter {
				l, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 5, Window: time.Hour}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			var reg []string
			for _, n := range names {
				if strings.HasPrefix(n, "\\") {
					continue
				}
				reg = append(reg, n)
			}
			reg = append(reg, "\u017fookup")
			root := newReview59eRootLim(t, pol, reg, mk())
			gate := newReview59eGateLim(t, pol, mk())
			var ro, gos []string
			for _, n := range seq {
				nj, _ := json.Marshal(n)
				params := `{"name":` + string(nj) + `,"arguments":{"amount":50}}`
				r, _ := root.call(t, who, params)
				g, _ := gate.call(t, who, params)
				ro, gos = append(ro, string(r)), append(gos, string(g))
			}
			if strings.Join(ro, ",") != strings.Join(gos, ",") {
				t.Errorf("who=%s seq=%q root=%v gateway=%v", who, seq, ro, gos)
			}
		}
	}
}

// TestReview59eBatchAgrees: a batch is authorized member by member, so a
// tools/call sent as the only member of a batch is forwarded exactly when
// it is forwarded alone.
func TestReview59eBatchAgrees(t *testing.T) {
	pol := review59ePolicies(t)["defaultlimits"]
	gate := newReview59eGate(t, pol)
	count := func() int {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return len(gate.got)
	}
	allowed := 0
	for _, who := range []string{"support", "finance", "viewer"} {
		for _, n := range []string{"trigger_refund", "TRIGGER_REFUND", "book", "other", "admin_reset_key", "ADMIN_RESET_KEY"} {
			for _, a := range review59eArgs {
				nj, _ := json.Marshal(n)
				params := `{"name":` + string(nj) + `,"arguments":` + a + `}`
				if a == "" {
					params = `{"name":` + string(nj) + `}`
				}
				single, _ := gate.call(t, who, params)
				before := count()
				_, body := review59ePost(t, gate.url, who, `[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":`+params+`}]`)
				batched := count() > before
				if single == "allowed" {
					allowed++
				}
				if batched != (single == "allowed") {
					t.Errorf("who=%s params=%s: alone %s, in a batch forwarded=%v: %s", who, params, single, batched, review59eCut(body))
				}
			}
		}
	}
	t.Logf("%d calls allowed", allowed)
}
