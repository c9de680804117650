package gateway

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// roundsRig is a gateway with a rate limit of one call of refund a minute
// per caller in front of a downstream that asks for a next round
// (input_required, requestState "st-<n>") of every call without a
// requestState and runs every call with one, answering JSON or, with sse,
// an event stream. It returns the gateway's URL and the count of calls run.
func roundsRig(t *testing.T, sse bool) (string, *atomic.Int32) {
	t.Helper()
	var asked, ran atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				RequestState string `json:"requestState"`
			} `json:"params"`
		}
		json.Unmarshal(body, &msg)
		answer := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[],"resultType":"input_required",` +
			`"inputRequests":{"confirm":{"method":"elicitation/create","params":{}}},"requestState":"st-` +
			strconv.Itoa(int(asked.Add(1))) + `"}}`
		if msg.Params.RequestState != "" {
			ran.Add(1)
			answer = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"done"}]}}`
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
			io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(down.Close)
	g, err := New(down.URL, DemoTokens(), &Options{Policy: review60cPolicy(t), Limiter: refundOnceAMinute(t), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)
	return gw.URL, &ran
}

func roundsPost(t *testing.T, url, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func roundsCall(args, state string) string {
	extra := ""
	if state != "" {
		extra = `,"inputResponses":{"confirm":{"action":"accept","content":{}}},"requestState":"` + state + `"`
	}
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"refund","arguments":` + args + extra + `}}`
}

// TestReview60NextRoundChargedOnce: the next round of a multi round-trip
// (protocol 2026-07-28), which carries the requestState the downstream
// gave that caller for that call, is the logical call the first round was
// charged for: under a rate of one call a minute the user's confirmed call
// runs, answered as JSON or in an event stream, as a single request or in
// a batch. A requestState the gateway did not see given (made up, given to
// another caller or for other arguments, or used already) is charged as
// any call.
func TestReview60NextRoundChargedOnce(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run("sse="+strconv.FormatBool(sse), func(t *testing.T) {
			url, ran := roundsRig(t, sse)
			if status, body := roundsPost(t, url, viewer, roundsCall(`{"amount":10}`, "")); status != 200 || !strings.Contains(body, `"requestState":"st-1"`) {
				t.Fatalf("first round: %d %s", status, body)
			}
			// Made up, for other arguments, another caller's: charged, and
			// the rate is spent.
			for _, tc := range []struct{ auth, args, state string }{
				{viewer, `{"amount":10}`, "st-9"},
				{viewer, `{"amount":1000}`, "st-1"},
				{admin, `{"amount":10}`, "st-1"},
			} {
				status, body := roundsPost(t, url, tc.auth, roundsCall(tc.args, tc.state))
				if tc.auth == admin {
					// The admin's first call of the minute: it runs.
					if status != 200 || !strings.Contains(body, "done") {
						t.Errorf("admin's call with the viewer's state: %d %s", status, body)
					}
					continue
				}
				if status != http.StatusTooManyRequests {
					t.Errorf("a next round with state %s and arguments %s, not given: %d %s, want 429", tc.state, tc.args, status, body)
				}
			}
			status, body := roundsPost(t, url, viewer, roundsCall(`{"amount":10}`, "st-1"))
			if status != 200 || !strings.Contains(body, "done") {
				t.Fatalf("the confirmed round: %d %s", status, body)
			}
			if status, body := roundsPost(t, url, viewer, roundsCall(`{"amount":10}`, "st-1")); status != http.StatusTooManyRequests {
				t.Errorf("the confirmed round again: %d %s, want 429 (a state is taken once)", status, body)
			}
			if got := ran.Load(); got != 2 {
				t.Errorf("the downstream ran %d calls, want 2 (the admin's and the confirmed one)", got)
			}
		})
	}
	t.Run("batch", func(t *testing.T) {
		url, ran := roundsRig(t, false)
		if status, body := roundsPost(t, url, viewer, "["+roundsCall(`{"amount":10}`, "")+"]"); status != 200 || !strings.Contains(body, `"requestState":"st-1"`) {
			t.Fatalf("first round: %d %s", status, body)
		}
		if status, body := roundsPost(t, url, viewer, "["+roundsCall(`{"amount":10}`, "st-1")+"]"); status != 200 || !strings.Contains(body, "done") {
			t.Fatalf("the confirmed round: %d %s", status, body)
		}
		if ran.Load() != 1 {
			t.Errorf("ran %d", ran.Load())
		}
	})
}

// TestReview60RequestStateSpellings: the gateway reads params.requestState
// to charge a call; a params object naming it twice, or under another
// spelling a Go downstream reads as it (encoding/json matches names
// without regard to case), is refused, as for name and arguments.
func TestReview60RequestStateSpellings(t *testing.T) {
	url, ran := roundsRig(t, false)
	for _, params := range []string{
		`{"name":"refund","arguments":{},"requestState":"a","requestState":"b"}`,
		`{"name":"refund","arguments":{},"RequestState":"a"}`,
	} {
		status, body := roundsPost(t, url, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`)
		if status != http.StatusBadRequest || !strings.Contains(body, "-32602") {
			t.Errorf("%s: %d %s, want 400 -32602", params, status, body)
		}
	}
	if ran.Load() != 0 {
		t.Errorf("ran %d", ran.Load())
	}
}

// TestReview60RetryableRefusal: what the gateway reads as a downstream's
// retryable refusal of a next round (its state still usable, the round
// remembered again): the library's error contract, in protocol-error mode
// and as a tool error, and nothing else.
func TestReview60RetryableRefusal(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"x","data":{"code":"UPSTREAM_UNAVAILABLE","retryable":true}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[],"structuredContent":{"error":{"code":"UPSTREAM_UNAVAILABLE","retryable":true}}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"x","data":{"retryable":false}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"retryable"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"error":{"retryable":true}}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[{"type":"text","text":"{\"retryable\":true}"}]}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"isError":true,"structuredContent":{"error":{"retryable":"true"}}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"isError":true,"structuredContent":{"error":{"retryable":true,"Retryable":false}}}}`, false},
	} {
		if got := retryableRefusal([]byte(tc.msg)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.msg, got, tc.want)
		}
	}
}

// TestReview60NextRoundRecord: the outcome record of a next round, charged
// nothing (cost 0), says it is one, so that a trail read later tells the
// logical call's charge (its first round's) from a call that cost nothing.
func TestReview60NextRoundRecord(t *testing.T) {
	d := &review60cDown{}
	down := httptest.NewServer(d)
	t.Cleanup(down.Close)
	sink := &memSink{}
	g, err := New(down.URL, DemoTokens(), &Options{Policy: review60cPolicy(t), Limiter: refundOnceAMinute(t), Audit: sink, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if status, body := review60cServe(g, viewer, review60cCall("refund", "")); status != 200 || !strings.Contains(body, `"st-1"`) {
		t.Fatalf("first round: %d %s", status, body)
	}
	if status, body := review60cServe(g, viewer, review60cCall("refund", "st-1")); status != 200 || !strings.Contains(body, "done") {
		t.Fatalf("next round: %d %s", status, body)
	}
	evs := sink.outcomes("refund")
	if len(evs) != 2 {
		t.Fatalf("%d outcome records, want 2", len(evs))
	}
	if evs[0].Detail != "" || !evs[1].Allowed || evs[1].Cost != 0 || evs[1].Detail != nextRoundDetail {
		t.Errorf("records: first %+v, next %+v; want the next one's detail %q", evs[0], evs[1], nextRoundDetail)
	}
}
