package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// setPolicyRig is newRig with the Gateway at hand.
func setPolicyRig(t *testing.T, opts *Options) (*rig, *Gateway) {
	t.Helper()
	d := &downstream{}
	dsrv := httptest.NewServer(d)
	t.Cleanup(dsrv.Close)
	var o Options
	if opts != nil {
		o = *opts
	}
	logs := &bytes.Buffer{}
	o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&sync.Mutex{}, logs}, nil))
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &o)
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)
	return &rig{url: gw.URL, gw: gw, down: d, dsrv: dsrv, logs: logs}, g
}

// refundsForAdmins is the default policy with trigger_refund kept for
// the role admin, and hidden from the others.
func refundsForAdmins(t *testing.T) *policy.Policy {
	t.Helper()
	cfg := DefaultPolicyConfig()
	cfg.RoleRules = append(cfg.RoleRules, policy.RoleRule{Pattern: "trigger_refund", Roles: []string{"admin"}})
	cfg.ShowForbidden = false
	p, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func listedTools(t *testing.T, body string) []string {
	t.Helper()
	var m struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("tools/list answer %q: %v", body, err)
	}
	var names []string
	for _, tl := range m.Result.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func TestSetPolicyDecidesTheNextCalls(t *testing.T) {
	rg, g := setPolicyRig(t, &Options{FilterToolsList: true})
	const list = `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
	if got := listedTools(t, rg.post(t, viewer, list).body); !strings.Contains(strings.Join(got, ","), "trigger_refund") {
		t.Fatalf("before: viewer's listing %v lacks trigger_refund", got)
	}
	if r := rg.post(t, viewer, call("1", "trigger_refund", "")); r.status != http.StatusOK {
		t.Fatalf("before: viewer's trigger_refund: %d %s", r.status, r.body)
	}
	p := refundsForAdmins(t)
	if err := g.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	if g.Policy() != p {
		t.Fatal("Policy() is not the policy SetPolicy set")
	}
	n := len(rg.down.log())
	r := rg.post(t, viewer, call("2", "trigger_refund", ""))
	if r.status == http.StatusOK {
		t.Fatalf("after: viewer's trigger_refund allowed: %s", r.body)
	}
	if got := len(rg.down.log()); got != n {
		t.Fatalf("after: the refused call reached the downstream (%d requests, want %d)", got, n)
	}
	// Hidden now, it is refused as an unknown tool is (ShowForbidden off).
	if _, code, _ := rpcErr(t, r.body); code != CodeMethodNotFound {
		t.Fatalf("after: viewer's trigger_refund refused with %d, want %d: %s", code, CodeMethodNotFound, r.body)
	}
	if got := listedTools(t, rg.post(t, viewer, list).body); strings.Contains(strings.Join(got, ","), "trigger_refund") {
		t.Fatalf("after: viewer's listing %v still shows trigger_refund", got)
	}
	if r := rg.post(t, admin, call("3", "trigger_refund", "")); r.status != http.StatusOK {
		t.Fatalf("after: admin's trigger_refund: %d %s", r.status, r.body)
	}
	// And back.
	if err := g.SetPolicy(DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if r := rg.post(t, viewer, call("4", "trigger_refund", "")); r.status != http.StatusOK {
		t.Fatalf("back: viewer's trigger_refund: %d %s", r.status, r.body)
	}
}

func TestSetPolicyRefusesAndKeeps(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Tool: "get_customer_record", Max: 5, Window: time.Minute},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultPolicyConfig()
	cfg.Default = nil
	cfg.Tools = []policy.ToolRule{{Name: "get_customer_record", Class: policy.Read}}
	first, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, g := setPolicyRig(t, &Options{Policy: first, Limiter: lim})
	if err := g.SetPolicy(nil); err == nil {
		t.Fatal("SetPolicy(nil) accepted")
	}
	// A policy without a rule for the limit's tool: the limit would cap
	// nothing, as New refuses it.
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Read}}
	second, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = g.SetPolicy(second)
	if err == nil || !strings.Contains(err.Error(), "get_customer_record") {
		t.Fatalf("SetPolicy with no rule for the limit's tool: %v", err)
	}
	if g.Policy() != first {
		t.Fatal("a refused SetPolicy replaced the policy")
	}
}

// TestSetPolicyCallUnderWayFinishes: a call allowed before the change is
// answered, not cut, and only the next one is refused.
func TestSetPolicyCallUnderWayFinishes(t *testing.T) {
	rg, g := setPolicyRig(t, nil)
	done := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, rg.url+"/mcp", strings.NewReader(call("1", "slow", "")))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", viewer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- reply{status: -1, body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- reply{status: resp.StatusCode, body: string(b)}
	}()
	for deadline := time.Now().Add(5 * time.Second); len(rg.down.log()) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow call never reached the downstream")
		}
	}
	cfg := DefaultPolicyConfig()
	cfg.RoleRules = append(cfg.RoleRules, policy.RoleRule{Pattern: "slow", Roles: []string{"admin"}})
	p, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.status != http.StatusOK || !strings.Contains(r.body, `"slow":true`) {
		t.Fatalf("the call under way: %d %s", r.status, r.body)
	}
	if r := rg.post(t, viewer, call("2", "slow", "")); r.status != http.StatusForbidden {
		t.Fatalf("the next call: %d %s", r.status, r.body)
	}
}

// TestSetPolicyConcurrent flips the policy while callers call and list:
// each answer is one of the two policies' (run with -race).
func TestSetPolicyConcurrent(t *testing.T) {
	rg, g := setPolicyRig(t, &Options{FilterToolsList: true})
	open, closed := DefaultPolicy(), refundsForAdmins(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := open
			if i%2 == 1 {
				p = closed
			}
			if err := g.SetPolicy(p); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	})
	var allowed, refused int
	for i := range 200 {
		r := rg.post(t, viewer, call("1", "trigger_refund", ""))
		switch r.status {
		case http.StatusOK:
			allowed++
		case http.StatusNotFound:
			refused++
		default:
			t.Fatalf("call %d: %d %s", i, r.status, r.body)
		}
		rg.post(t, viewer, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
	}
	close(stop)
	wg.Wait()
	var forwarded int
	for _, b := range rg.down.bodies() {
		if strings.Contains(b, `"trigger_refund"`) {
			forwarded++
		}
	}
	if forwarded != allowed {
		t.Fatalf("%d calls allowed, %d forwarded (refused %d)", allowed, forwarded, refused)
	}
}
