package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPinsAcceptedWithBody: with pins, the answer to a POST without a
// request (a notification, a client's response) that has a body other than
// JSON, as Express's res.sendStatus(202) sends ("Accepted", text/plain), is
// relayed as accepted, not turned into a 502: no client reads that body
// (the go-sdk closes it, and fails its connection on a 502 to
// notifications/initialized, so Connect failed).
func TestPinsAcceptedWithBody(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := newRugDown()
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if !strings.Contains(string(body), `"id"`) || !strings.Contains(string(body), `"method"`) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusAccepted)
				io.WriteString(w, "Accepted")
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		d.ServeHTTP(w, r)
	}))
	g, err := New(down.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	rg := &rig{url: gw.URL}
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":9,"result":{}}`,
	} {
		if r := rg.post(t, admin, body); r.status != http.StatusAccepted {
			t.Errorf("%s: %d %s, want the downstream's 202", body, r.status, r.body)
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"admin-token", http.DefaultTransport}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("ListTools after Connect: %v", err)
	}
}

// TestBatchMemberRedirectRefused: a batch member the downstream answers
// with a redirect is answered with an upstream error, logged with where it
// pointed and recorded as one, as a single request's redirect is: not with
// the body of the redirect as if it were the tool's answer (the call was
// not run there), and the batch's answer carries no Location.
func TestBatchMemberRedirectRefused(t *testing.T) {
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Params struct{ Name string }
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &m)
		w.Header().Set("Content-Type", "application/json")
		if m.Params.Name == "moved" {
			w.Header().Set("Location", "http://198.51.100.7/mcp/")
			w.WriteHeader(http.StatusTemporaryRedirect)
		}
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[{"type":"text","text":"ran `+m.Params.Name+`"}]}}`)
	}))
	sink := &memSink{}
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Audit: sink, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	r := rg.post(t, admin, `[`+call(`1`, "get_customer_record", `{}`)+`,`+call(`2`, "moved", `{}`)+`]`)
	if r.header.Get("Location") != "" {
		t.Errorf("the batch's answer carries Location %q", r.header.Get("Location"))
	}
	var answers []struct {
		ID     json.RawMessage
		Result json.RawMessage
		Error  *struct{ Code int }
	}
	if err := json.Unmarshal([]byte(r.body), &answers); err != nil || len(answers) != 2 {
		t.Fatalf("answer %d %s: %v", r.status, r.body, err)
	}
	for _, a := range answers {
		if string(a.ID) == "2" && (a.Error == nil || a.Error.Code != CodeUpstreamUnavailable) {
			t.Errorf("the redirected member was answered %s %+v, want error %d", a.Result, a.Error, CodeUpstreamUnavailable)
		}
	}
	if evs := sink.outcomes("moved"); len(evs) != 1 || evs[0].Allowed || evs[0].Code != "UPSTREAM_UNAVAILABLE" {
		t.Errorf("records of the redirected call: %+v, want one UPSTREAM_UNAVAILABLE", evs)
	}
}

// TestPinsChangedRecordNotCrowdedOut: the bound on the withheld tools
// recorded one by one is kept per verdict, so that a listing of many tools
// a fixed set does not name cannot push the record that matters, a pinned
// tool's changed definition, into an anonymous count.
func TestPinsChangedRecordNotCrowdedOut(t *testing.T) {
	var tools strings.Builder
	for i := range 2 * maxWithheldRecords {
		fmt.Fprintf(&tools, `{"name":"tool_%d"},`, i)
	}
	tools.WriteString(poisonedTool)
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":[`+tools.String()+`]}}`)
	}))
	sink := &memSink{}
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Pins: fixedGoodPins(t), Audit: sink, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	if r := rg.post(t, admin, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); r.status != 200 || strings.Contains(r.body, "tool_") {
		t.Fatalf("listing: %d %.200s", r.status, r.body)
	}
	if evs := sink.outcomes("get_customer_record"); len(evs) != 1 || evs[0].Code != "TOOL_CHANGED" {
		t.Errorf("records of the changed tool: %+v, want one TOOL_CHANGED", evs)
	}
	if n := len(sink.since(0)); n > 2*maxWithheldRecords+2 {
		t.Errorf("%d records of one listing, want at most %d", n, 2*maxWithheldRecords+2)
	}
}

// TestPinsGetStreamEndsWithClient: with pins, a GET stream the downstream
// never ends (read without a timeout) ends downstream when its client goes.
func TestPinsGetStreamEndsWithClient(t *testing.T) {
	d := newRugDown()
	ended := make(chan struct{})
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.ServeHTTP(w, r)
		if r.Method == http.MethodGet {
			close(ended)
		}
	}))
	g, err := New(down.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, newServer(t, g).URL+"/mcp", nil)
	req.Header.Set("Authorization", admin)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, d.getUp, "the GET stream")
	cancel()
	resp.Body.Close()
	wait(t, ended, "the downstream's GET stream to end after its client went")
}
