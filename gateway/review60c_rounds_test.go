package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// review60cDown is a downstream that asks for a next round (input_required,
// requestState "st-<n>") of every refund without a requestState and runs
// every refund with one; a call of "slow" waits until hold is closed.
type review60cDown struct {
	asked, ran atomic.Int32
	slow       chan struct{} // a value when a slow call arrives
	hold       chan struct{}
}

func (d *review60cDown) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			Name         string `json:"name"`
			RequestState string `json:"requestState"`
		} `json:"params"`
	}
	json.Unmarshal(body, &msg)
	if msg.Params.Name == "slow" {
		d.slow <- struct{}{}
		<-d.hold
	}
	answer := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[],"resultType":"input_required",` +
		`"inputRequests":{"confirm":{"method":"elicitation/create","params":{}}},"requestState":"st-` +
		strconv.Itoa(int(d.asked.Add(1))) + `"}}`
	if msg.Params.RequestState != "" || msg.Params.Name == "slow" {
		if msg.Params.Name == "refund" {
			d.ran.Add(1)
		}
		answer = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"done"}]}}`
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, answer)
}

func review60cPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write}, {Name: "slow", Class: policy.Read}},
		WriteAllowlist: []string{"refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// refundOnceAMinute returns a limiter of one refund a minute per caller.
func refundOnceAMinute(t *testing.T) *limiter.Limiter {
	t.Helper()
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Tool: "refund", Max: 1, Window: time.Minute}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// review60cServe sends body as auth's POST to g in process and returns the
// status and the answer.
func review60cServe(g http.Handler, auth, body string) (int, string) {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func review60cCall(tool, state string) string {
	extra := ""
	if state != "" {
		extra = `,"inputResponses":{"confirm":{"action":"accept","content":{}}},"requestState":"` + state + `"`
	}
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"amount":10}` + extra + `}}`
}

// TestReview60cRefusedRoundsFlushOthersStates: a caller whose next rounds
// the limiter refuses (its in-flight cap held by a slow call of its own)
// makes the gateway append its requestState to the memory's order once
// more at each refusal (take deletes it, remember adds it back as new),
// and past 2×8192 entries in that order the oldest is dropped: another
// caller's requestState, remembered a moment before, is forgotten although
// only two were remembered. Options.Limiter's doc (and rounds.go) say the
// next round is charged nothing, with at most 8192 states remembered
// before the oldest is forgotten; here one caller, with one charged call
// and 16384 refused requests that cost it nothing (repeated, every few
// seconds), makes every other user's confirmed write charged a second
// time: under a rate of one refund a minute it is refused 429.
func TestReview60cRefusedRoundsFlushOthersStates(t *testing.T) {
	d := &review60cDown{slow: make(chan struct{}, 1), hold: make(chan struct{})}
	down := httptest.NewServer(d)
	t.Cleanup(down.Close)
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Tool: "refund", Max: 1, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(down.URL, DemoTokens(), &Options{Policy: review60cPolicy(t), Limiter: lim, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// The user (admin) is asked to confirm: st-1. The other caller
	// (viewer) too: st-2.
	if status, body := review60cServe(g, admin, review60cCall("refund", "")); status != 200 || !strings.Contains(body, `"st-1"`) {
		t.Fatalf("admin's first round: %d %s", status, body)
	}
	if status, body := review60cServe(g, viewer, review60cCall("refund", "")); status != 200 || !strings.Contains(body, `"st-2"`) {
		t.Fatalf("viewer's first round: %d %s", status, body)
	}
	// The viewer holds its in-flight place with a slow call.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		review60cServe(g, viewer, review60cCall("slow", ""))
	}()
	<-d.slow
	refused := 0
	for range 2 * maxRounds {
		if status, _ := review60cServe(g, viewer, review60cCall("refund", "st-2")); status == http.StatusTooManyRequests {
			refused++
		}
	}
	close(d.hold)
	wg.Wait()
	if refused != 2*maxRounds {
		t.Fatalf("%d of the viewer's %d next rounds refused, want all (in flight)", refused, 2*maxRounds)
	}
	// The user confirms: the next round of the call its question was
	// charged for.
	status, body := review60cServe(g, admin, review60cCall("refund", "st-1"))
	if status != 200 || d.ran.Load() != 1 {
		t.Errorf("admin's confirmed next round: %d %s (ran %d); want 200 and run: another caller's refused "+
			"rounds made the gateway forget the user's requestState, and charge its next round again",
			status, body, d.ran.Load())
	}
}

// review60cFailSink fails every intent record while fail is set.
type review60cFailSink struct{ fail atomic.Bool }

func (s *review60cFailSink) Write(_ context.Context, e *audit.Event) error {
	if e.Phase == audit.PhaseIntent && s.fail.Load() {
		return errors.New("sink down")
	}
	return nil
}

// TestReview60cUnsentNextRoundForgotten: a next round the gateway refuses
// before sending it (no durable intent: AUDIT_UNAVAILABLE; the downstream
// refusing connections: UPSTREAM_UNAVAILABLE) never ran, and Options.Limiter's
// doc says such a call is given back what it was charged, so that
// "clients retrying through an outage do not use up their caps on calls
// that never ran". The gateway takes (forgets) the round's requestState
// before the refusal and does not remember it again: the client's retry
// of the same round, the same logical call whose question was charged, is
// charged as a new call, and under a rate of one refund a minute refused
// 429; the write the user confirmed never runs.
func TestReview60cUnsentNextRoundForgotten(t *testing.T) {
	t.Run("audit", func(t *testing.T) {
		d := &review60cDown{}
		down := httptest.NewServer(d)
		t.Cleanup(down.Close)
		lim := refundOnceAMinute(t)
		sink := &review60cFailSink{}
		g, err := New(down.URL, DemoTokens(), &Options{Policy: review60cPolicy(t), Limiter: lim, Audit: sink, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if status, body := review60cServe(g, viewer, review60cCall("refund", "")); status != 200 || !strings.Contains(body, `"st-1"`) {
			t.Fatalf("first round: %d %s", status, body)
		}
		sink.fail.Store(true)
		if status, body := review60cServe(g, viewer, review60cCall("refund", "st-1")); status != http.StatusServiceUnavailable || !strings.Contains(body, "AUDIT_UNAVAILABLE") {
			t.Fatalf("next round with the sink down: %d %s", status, body)
		}
		sink.fail.Store(false)
		status, body := review60cServe(g, viewer, review60cCall("refund", "st-1"))
		if status != 200 || d.ran.Load() != 1 {
			t.Errorf("the next round again, the sink back: %d %s (ran %d); want 200 and run", status, body, d.ran.Load())
		}
	})
	t.Run("dial", func(t *testing.T) {
		d := &review60cDown{}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		srv := &http.Server{Handler: d}
		go srv.Serve(ln)
		lim := refundOnceAMinute(t)
		g, err := New("http://"+addr+"/mcp", DemoTokens(), &Options{Policy: review60cPolicy(t), Limiter: lim, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if status, body := review60cServe(g, viewer, review60cCall("refund", "")); status != 200 || !strings.Contains(body, `"st-1"`) {
			t.Fatalf("first round: %d %s", status, body)
		}
		srv.Close() // the downstream is down: connections refused
		if status, body := review60cServe(g, viewer, review60cCall("refund", "st-1")); status != http.StatusBadGateway {
			t.Fatalf("next round with the downstream down: %d %s", status, body)
		}
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			t.Skip("the downstream's port was taken meanwhile:", err)
		}
		srv = &http.Server{Handler: d}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		status, body := review60cServe(g, viewer, review60cCall("refund", "st-1"))
		if status != 200 || d.ran.Load() != 1 {
			t.Errorf("the next round again, the downstream back: %d %s (ran %d); want 200 and run", status, body, d.ran.Load())
		}
	})
}
