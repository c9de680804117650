package mcpguard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Review 28: protocol versions older than the two the other tests run on
// (2026-07-28 and 2025-11-25), which clients in the field still negotiate,
// through a guard installed on a real go-sdk server: in memory, over a
// stdio-like pipe speaking raw JSON-RPC (with batches, which 2025-03-26
// and 2024-11-05 have), and over Streamable HTTP, stateful and stateless.

// oldVersions are the protocol versions before 2025-11-25 that go-sdk
// v1.8.0 still negotiates; allVersions adds the default (2026-07-28) and
// 2025-11-25.
var (
	oldVersions = []string{"2025-06-18", "2025-03-26", "2024-11-05"}
	allVersions = []string{"", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
)

// r28Conn speaks raw JSON-RPC lines to a server over a stdio-like pipe.
type r28Conn struct {
	t  *testing.T
	w  io.WriteCloser
	rd *bufio.Reader
	ss *mcp.ServerSession
}

func (h *harness) r28Connect(id *mcpguard.Identity) *r28Conn {
	h.t.Helper()
	cr, sw := io.Pipe() // server writes, test reads
	sr, cw := io.Pipe() // test writes, server reads
	ss, err := h.srv.Connect(context.Background(), &mcp.IOTransport{Reader: sr, Writer: sw}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.auth.mu.Lock()
	h.auth.ids[ss] = id
	h.auth.mu.Unlock()
	h.t.Cleanup(func() { cw.Close(); ss.Close(); cr.Close() })
	return &r28Conn{t: h.t, w: cw, rd: bufio.NewReader(cr), ss: ss}
}

func (c *r28Conn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// recv reads one line, failing after 5 s.
func (c *r28Conn) recv() string {
	c.t.Helper()
	ch := make(chan string, 1)
	go func() {
		l, _ := c.rd.ReadString('\n')
		ch <- l
	}()
	select {
	case l := <-ch:
		return l
	case <-time.After(5 * time.Second):
		c.t.Fatal("no answer within 5 s")
		return ""
	}
}

func (c *r28Conn) init(version string, caps string) {
	c.t.Helper()
	if caps == "" {
		caps = "{}"
	}
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":` + caps + `,"clientInfo":{"name":"old-client","version":"1"}}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
}

type r28HTTP struct {
	url  string
	sink *memSink
	down *spy
}

func r28HTTPServer(t *testing.T, stateless bool, opts *mcpguard.Options) *r28HTTP {
	t.Helper()
	h := &r28HTTP{sink: &memSink{}, down: &spy{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	addTools(srv, h.down)
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	authn := mcpguard.AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
		if ex := req.GetExtra(); ex != nil && ex.Header != nil {
			switch ex.Header.Get("Authorization") {
			case "Bearer bob-token":
				return bob, nil
			case "Bearer alice-token":
				return alice, nil
			}
		}
		return nil, mcpguard.ErrUnauthenticated
	})
	var o mcpguard.Options
	if opts != nil {
		o = *opts
	}
	o.Audit, o.Confirmer = h.sink, testSigner(t, nil)
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := mcpguard.New(pol, authn, &o)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless, JSONResponse: true}))
	t.Cleanup(hs.Close)
	h.url = hs.URL
	return h
}

// post sends body and returns the status, the session id and the body.
func (h *r28HTTP) post(t *testing.T, tok, version, session, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", h.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

func TestReview28OldProtoContract(t *testing.T) {
	wire := map[string]int64{"UNAUTHENTICATED": -32000, "FORBIDDEN": -32001, "WRITE_NOT_ALLOWED": -32001,
		"INVALID_ARGUMENTS": -32602, "CONFIRMATION_REQUIRED": -32001, "INVALID_RESPONSE": -32603, "INTERNAL": -32603, "RATE_LIMIT_EXCEEDED": -32029}
	for _, v := range allVersions {
		for _, perr := range []bool{false, true} {
			t.Run(versionName(v)+"/"+map[bool]string{false: "tool", true: "protocol"}[perr], func(t *testing.T) {
				lim, _ := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 3, Window: time.Hour}}, nil)
				h := newHarness(t, basePolicy(true), &mcpguard.Options{ProtocolErrors: perr, Limiter: lim})
				anon := h.connect(nil, clientOpts{version: v})
				cs := h.connect(bob, clientOpts{version: v})
				check := func(cs *mcp.ClientSession, tool string, args any, want string) {
					t.Helper()
					res, err := call(t, cs, tool, args)
					if perr && want == "" {
						if err != nil || res.IsError {
							t.Errorf("%s: got %v %v, want success", tool, res, err)
						}
						return
					}
					if perr {
						we := wireError(err)
						if we == nil || we.Code != wire[want] {
							t.Errorf("%s: got %v %v, want JSON-RPC %d", tool, res, err, wire[want])
						}
						return
					}
					if err != nil || errorCode(t, res) != want {
						t.Errorf("%s: got code %q err %v, want %s", tool, errorCode(t, res), err, want)
					}
				}
				check(anon, "echo", map[string]any{"text": "x"}, "UNAUTHENTICATED")
				check(cs, "admin_stats", map[string]any{}, "FORBIDDEN")
				check(cs, "delete_all", map[string]any{}, "WRITE_NOT_ALLOWED")
				check(cs, "add_note", map[string]any{"title": 5}, "INVALID_ARGUMENTS")
				if v != "" { // on 2026-07-28 the client asks itself, and fails
					check(cs, "wipe", map[string]any{"target": "x"}, "CONFIRMATION_REQUIRED")
				}
				check(cs, "bad_output", map[string]any{}, "INVALID_RESPONSE")
				check(cs, "panic_tool", map[string]any{}, "INTERNAL")
				check(cs, "echo", map[string]any{"text": "x"}, "")
				check(cs, "echo", map[string]any{"text": "x"}, "RATE_LIMIT_EXCEEDED")
				if h.down.calls.Load() != 0 {
					t.Errorf("downstream touched %d times", h.down.calls.Load())
				}
				wantV := v
				if v == "" {
					wantV = "2026-07-28"
				}
				for _, e := range h.sink.all() {
					if e.Subject == "bob" && (e.ProtocolVersion != wantV || e.ClientName != "test-client") {
						t.Errorf("audit %s: protocol_version %q client_name %q, want %q test-client", e.Tool, e.ProtocolVersion, e.ClientName, wantV)
					}
				}
			})
		}
	}
}

// TestReview28OldProtoWriteInputCancel: a write tool whose handler asks for
// more input (multi round-trip). On a client before 2026-07-28 the go-sdk
// asks that question inside the call, below the guard. The client then
// cancels its call; the server's side must end (not wait for ever for an
// answer the client will not give), and free the caller's in-flight place.
func TestReview28OldProtoWriteInputCancel(t *testing.T) {
	for _, v := range []string{"2025-11-25", "2025-06-18"} {
		for _, class := range []policy.Class{policy.Read, policy.Write} {
			t.Run(v+"/"+class.String(), func(t *testing.T) {
				srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
				var runs atomic.Int64
				srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					runs.Add(1)
					if req.Params.RequestState == "" {
						return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "which?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}}, RequestState: "s1"}, nil
					}
					return textResult("done"), nil
				})
				cfg := policy.Config{Tools: []policy.ToolRule{{Name: "ask", Class: class}}, WriteAllowlist: []string{"ask"}}
				pol, err := policy.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				lim, _ := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
				auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
				sink := &memSink{}
				g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Limiter: lim, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					t.Fatal(err)
				}
				if err := g.Install(srv); err != nil {
					t.Fatal(err)
				}
				release := make(chan struct{})
				var asked atomic.Int64
				ct, st := mcp.NewInMemoryTransports()
				ss, err := srv.Connect(context.Background(), st, nil)
				if err != nil {
					t.Fatal(err)
				}
				auth.mu.Lock()
				auth.ids[ss] = alice
				auth.mu.Unlock()
				c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					<-release // the user walked away
					return &mcp.ElicitResult{Action: "cancel"}, nil
				}})
				cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { close(release); cs.Close(); ss.Close() })
				cctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
				cancel()
				if err == nil || asked.Load() != 1 {
					t.Fatalf("call: err %v, asked %d; want the client's deadline after one question", err, asked.Load())
				}
				wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer wcancel()
				if err := g.Wait(wctx); err != nil {
					t.Fatalf("the cancelled call still runs on the server 2 s later (handler ran %d times): %v", runs.Load(), err)
				}
				if runs.Load() != 1 {
					t.Errorf("handler ran %d times, want its first round only", runs.Load())
				}
				evs := sink.all()
				if len(evs) == 0 || evs[len(evs)-1].Phase != audit.PhaseOutcome || evs[len(evs)-1].Allowed ||
					!strings.Contains(evs[len(evs)-1].Detail, "client went away") {
					t.Errorf("audit %+v: want a refused outcome record last, for the client's going away", evs)
				}
			})
		}
	}
}

// TestReview28OldProtoConfirm: a confirmed write on every protocol version,
// in memory. A client that can answer an elicitation (the go-sdk client
// declares it for any version once it has an ElicitationHandler) is asked
// once: accept runs the tool once, decline never. One that cannot is never
// asked and is refused CONFIRMATION_REQUIRED; the tool does not run. On
// 2026-07-28 too: a client that declares no elicitation in its request's
// _meta (the go-sdk's without an ElicitationHandler, mcp-go's without an
// elicitation handler) was asked in the result, and its SDK failed the call
// with an error of its own ("cannot fulfil the input request"), which
// carries no code to read.
func TestReview28OldProtoConfirm(t *testing.T) {
	for _, v := range allVersions {
		for _, action := range []string{"accept", "decline", "none"} {
			t.Run(versionName(v)+"/"+action, func(t *testing.T) {
				h := newHarness(t, basePolicy(false), nil)
				var asked atomic.Int64
				co := clientOpts{version: v}
				if action != "none" {
					co.elicit = answer(action, &asked)
				}
				cs := h.connect(alice, co)
				res, err := call(t, cs, "wipe", map[string]any{"target": "db"})
				code := errorCode(t, res)
				wantAsked, wantRuns, wantCode := int64(1), int64(0), "CONFIRMATION_REQUIRED"
				switch action {
				case "accept":
					wantRuns, wantCode = 1, ""
				case "none":
					wantAsked = 0
				}
				if err != nil {
					t.Fatal(err)
				}
				if asked.Load() != wantAsked || h.down.calls.Load() != wantRuns || code != wantCode {
					t.Errorf("asked %d, ran %d, code %q; want %d, %d, %q", asked.Load(), h.down.calls.Load(), code, wantAsked, wantRuns, wantCode)
				}
				wantV := v
				if v == "" {
					wantV = "2026-07-28"
				}
				evs := h.sink.all()
				last := evs[len(evs)-1]
				if last.Phase != audit.PhaseOutcome || last.Allowed != (wantCode == "") || last.Code != wantCode || last.ProtocolVersion != wantV {
					t.Errorf("last record %+v: want the outcome, code %q, protocol %s", last, wantCode, wantV)
				}
			})
		}
	}
}

// TestReview28OldProtoDryRun: with dry-run on, writes (a confirmed one
// too) are simulated on every version: nothing runs, nobody is asked, the
// records say dry_run and the version.
func TestReview28OldProtoDryRun(t *testing.T) {
	for _, v := range allVersions {
		t.Run(versionName(v), func(t *testing.T) {
			h := newHarness(t, basePolicy(false), &mcpguard.Options{DryRun: true})
			var asked atomic.Int64
			cs := h.connect(alice, clientOpts{version: v, elicit: answer("accept", &asked)})
			for tool, args := range map[string]map[string]any{"wipe": {"target": "db"}, "add_note": {"title": "t"}} {
				res, err := call(t, cs, tool, args)
				if err != nil || res.IsError {
					t.Fatalf("%s: %v %v", tool, res, err)
				}
				if txt := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(txt, "DRYRUN-") {
					t.Errorf("%s: %s, want a simulated result", tool, txt)
				}
			}
			if h.down.calls.Load() != 0 || asked.Load() != 0 {
				t.Errorf("ran %d, asked %d; want neither", h.down.calls.Load(), asked.Load())
			}
			wantV := v
			if v == "" {
				wantV = "2026-07-28"
			}
			evs := h.sink.all()
			if len(evs) != 2 {
				t.Fatalf("%d records, want 2: %+v", len(evs), evs)
			}
			for _, e := range evs {
				if !e.DryRun || !e.Allowed || e.ProtocolVersion != wantV || e.ClientName != "test-client" {
					t.Errorf("record %+v: want an allowed dry run on %s by test-client", e, wantV)
				}
			}
		})
	}
}

// r28Batch mixes, for bob (no admin role): a read, a write off the
// allowlist, a tool hidden from him, a confirmed write his client cannot
// be asked about, a listing, and two writes of cost 1 against a spend cap
// of 1.
const r28Batch = `[` +
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}},` +
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_all","arguments":{}}},` +
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"admin_stats","arguments":{}}},` +
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"wipe","arguments":{"target":"x"}}},` +
	`{"jsonrpc":"2.0","id":5,"method":"tools/list"},` +
	`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"add_note","arguments":{"title":"a"}}},` +
	`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"add_note","arguments":{"title":"b"}}}]`

func r28SpendCap(t *testing.T) *limiter.Limiter {
	t.Helper()
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// checkBatch checks the answer to r28Batch and its audit trail: every
// member answered under its own id, through the whole pipeline, one
// outcome record each, the spend counted once each.
func checkBatch(t *testing.T, body string, sink *memSink, down *spy, version, client string) {
	t.Helper()
	var members []json.RawMessage
	if err := json.Unmarshal([]byte(body), &members); err != nil || len(members) != 7 {
		t.Fatalf("answer %s: %v; want 7 members", body, err)
	}
	byID := map[string]json.RawMessage{}
	for _, m := range members {
		var v struct{ ID json.RawMessage }
		json.Unmarshal(m, &v)
		byID[string(v.ID)] = m
	}
	code := func(id string) string {
		var v struct {
			Result *mcp.CallToolResult
		}
		if err := json.Unmarshal(byID[id], &v); err != nil || v.Result == nil {
			return "no result: " + string(byID[id])
		}
		if !v.Result.IsError {
			return ""
		}
		var e struct {
			Error struct{ Code string }
		}
		json.Unmarshal([]byte(v.Result.Content[0].(*mcp.TextContent).Text), &e)
		return e.Error.Code
	}
	for id, want := range map[string]string{"1": "", "2": "WRITE_NOT_ALLOWED", "4": "CONFIRMATION_REQUIRED"} {
		if got := code(id); got != want {
			t.Errorf("member %s: %q, want %q", id, got, want)
		}
	}
	if got, want := string(byID["3"]), `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"unknown tool \"admin_stats\""}}`; got != want {
		t.Errorf("hidden tool:\n got %s\nwant %s (the go-sdk's unknown tool)", got, want)
	}
	if l := string(byID["5"]); strings.Contains(l, "admin_stats") || !strings.Contains(l, `"echo"`) {
		t.Errorf("listing %s: want echo, not admin_stats", l)
	}
	if a, b := code(`"a"`), code(`"b"`); a+b != "SPEND_LIMIT_EXCEEDED" {
		t.Errorf("writes a, b: %q, %q; want one to run and one SPEND_LIMIT_EXCEEDED", a, b)
	}
	if down.calls.Load() != 1 {
		t.Errorf("downstream ran %d times, want 1", down.calls.Load())
	}
	outcomes, intents := map[string]int{}, 0
	for _, e := range sink.all() {
		if e.Phase == audit.PhaseIntent {
			intents++
		} else {
			outcomes[e.Tool+"/"+e.Code]++
		}
		if e.Subject != "bob" || e.ProtocolVersion != version || e.ClientName != client {
			t.Errorf("record %+v: want bob on %s with client %q", e, version, client)
		}
	}
	want := map[string]int{"echo/": 1, "delete_all/WRITE_NOT_ALLOWED": 1, "admin_stats/TOOL_NOT_FOUND": 1,
		"wipe/CONFIRMATION_REQUIRED": 1, "add_note/": 1, "add_note/SPEND_LIMIT_EXCEEDED": 1}
	if fmt.Sprint(outcomes) != fmt.Sprint(want) || intents != 1 {
		t.Errorf("outcome records %v and %d intents; want %v and 1", outcomes, intents, want)
	}
}

// TestReview28OldProtoStdioBatch: a batch over a stdio-like pipe on the
// versions that have batches, in both reporting modes' default (tool
// errors).
func TestReview28OldProtoStdioBatch(t *testing.T) {
	for _, v := range []string{"2025-03-26", "2024-11-05"} {
		t.Run(v, func(t *testing.T) {
			h := newHarness(t, basePolicy(false), &mcpguard.Options{Limiter: r28SpendCap(t)})
			c := h.r28Connect(bob)
			c.init(v, "")
			c.send(r28Batch)
			checkBatch(t, c.recv(), h.sink, h.down, v, "old-client")
		})
	}
}

// TestReview28OldProtoHTTPBatch: the same batch over Streamable HTTP, on a
// stateful session opened with 2025-03-26, and stateless with that
// version's header (no initialize: the go-sdk takes the header's version,
// and there is no client name).
func TestReview28OldProtoHTTPBatch(t *testing.T) {
	const v = "2025-03-26"
	for _, stateless := range []bool{true, false} {
		t.Run(map[bool]string{true: "stateless", false: "stateful"}[stateless], func(t *testing.T) {
			h := r28HTTPServer(t, stateless, &mcpguard.Options{Limiter: r28SpendCap(t)})
			sid, client := "", ""
			if !stateless {
				client = "old-http"
				_, sid, _ = h.post(t, "bob-token", "", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"old-http","version":"1"}}}`)
				h.post(t, "bob-token", v, sid, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
			}
			status, _, body := h.post(t, "bob-token", v, sid, r28Batch)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			checkBatch(t, body, h.sink, h.down, v, client)
		})
	}
}

// TestReview28OldProtoBatchSameID: a batch whose two writes share an id.
// go-sdk v1.8.0 answers one of them over HTTP, and runs one, or on a
// session both (CI once read the records when the second had its intent
// and had not run yet: 2 intents, 1 run); whatever runs is recorded,
// intent and outcome.
func TestReview28OldProtoBatchSameID(t *testing.T) {
	const dup = `[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add_note","arguments":{"title":"a"}}},` +
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add_note","arguments":{"title":"b"}}}]`
	for _, stateless := range []bool{true, false} {
		h := r28HTTPServer(t, stateless, nil)
		sid := ""
		if !stateless {
			_, sid, _ = h.post(t, "alice-token", "", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"old-http","version":"1"}}}`)
			h.post(t, "alice-token", "2025-03-26", sid, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
		}
		h.post(t, "alice-token", "2025-03-26", sid, dup)
		// The answer may come back before the second call has run: the
		// go-sdk ends the POST's answer with the first response for id 7.
		// The calls under way are waited for, within 5 s.
		count := func() (runs, intents, outcomes int64) {
			for _, e := range h.sink.all() {
				if e.Phase == audit.PhaseIntent {
					intents++
				} else if e.Allowed {
					outcomes++
				}
			}
			return h.down.calls.Load(), intents, outcomes
		}
		runs, intents, outcomes := count()
		for deadline := time.Now().Add(5 * time.Second); (intents != runs || outcomes != runs) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			runs, intents, outcomes = count()
		}
		if runs == 0 || intents != runs || outcomes != runs {
			t.Errorf("stateless %v: ran %d, %d intents, %d allowed outcomes; want one each per run", stateless, runs, intents, outcomes)
		}
	}
}

// TestReview28OldProtoRequestState: a client on an older version sending
// a request state and an answer of its own: a forged state is refused; a
// state issued to the same subject on 2026-07-28 runs once (a state is
// bound to the subject, tool and arguments, not to a session or version,
// and the answer comes in the caller's own authenticated call); its replay
// is refused.
func TestReview28OldProtoRequestState(t *testing.T) {
	for _, v := range oldVersions {
		t.Run(v, func(t *testing.T) {
			h := newHarness(t, basePolicy(false), nil)
			modern := h.connect(alice, clientOpts{noMRTR: true})
			res, err := call(t, modern, "wipe", map[string]any{"target": "db"})
			if err != nil || res.RequestState == "" {
				t.Fatalf("%v %v: want a request state", res, err)
			}
			old := h.connect(alice, clientOpts{version: v})
			for i, tc := range []struct {
				state, want string
				runs        int64
			}{{"forged", "CONFIRMATION_REQUIRED", 0}, {res.RequestState, "", 1}, {res.RequestState, "CONFIRMATION_REQUIRED", 1}} {
				r, err := old.CallTool(context.Background(), &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{"target": "db"}, RequestState: tc.state,
					InputResponses: mcp.InputResponseMap{"mcpguard.confirm": &mcp.ElicitResult{Action: "accept"}}})
				if err != nil || errorCode(t, r) != tc.want || h.down.calls.Load() != tc.runs {
					t.Errorf("call %d: %q %v, ran %d; want %q, ran %d", i, errorCode(t, r), err, h.down.calls.Load(), tc.want, tc.runs)
				}
			}
		})
	}
}
