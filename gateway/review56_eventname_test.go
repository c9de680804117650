package gateway

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// clientMessages returns the data of the events of an event stream that a
// client dispatches as messages: those of non-empty data named "message"
// or not named, the name read as the SSE specification reads it (one
// space after the colon dropped: the TypeScript and Python SDKs) or, with
// goSDK, with the white space around it trimmed (the go-sdk's client).
func clientMessages(t *testing.T, stream string, goSDK bool) []string {
	t.Helper()
	var out []string
	name, data, hasData := "", "", false
	sc := bufio.NewScanner(strings.NewReader(stream))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if hasData && data != "" && (name == "" || name == "message") {
				out = append(out, data)
			}
			name, data, hasData = "", "", false
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		if goSDK {
			value = strings.TrimSpace(value)
		} else {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "event":
			name = value
		case "data":
			if hasData {
				data += "\n"
			}
			data += value
			hasData = true
		}
	}
	return out
}

// answersByID returns the responses among msgs, JSON-RPC messages, by id,
// each as its result's text (or "error").
func answersByID(t *testing.T, msgs []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, msg := range msgs {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result *struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(msg), &m); err != nil {
			t.Fatalf("a message the client reads is not JSON: %q", msg)
		}
		if m.Method != "" {
			continue
		}
		text := "error"
		if m.Result != nil && len(m.Result.Content) > 0 {
			text = m.Result.Content[0].Text
		}
		out[string(m.ID)] = append(out[string(m.ID)], text)
	}
	return out
}

// rpcIDOf returns the id of r's JSON-RPC request as written, "" for
// none (a notification, a batch, a GET).
func rpcIDOf(r *http.Request) string {
	body, _ := io.ReadAll(r.Body)
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(body, &m)
	return string(m.ID)
}

// sseDown is a downstream that answers every request with the event
// stream events gives for the request's id.
func sseDown(t *testing.T, events func(id string) string) *httptest.Server {
	return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, events(rpcIDOf(r)))
	}))
}

// namedEventsDown is a downstream that answers every request with an
// event stream: an event named first holding a response to it whose text
// is "ignored", then, unless first is "", an event named message holding
// the real one ("real"). A request without an id is answered 202.
func namedEventsDown(t *testing.T, first string, onlyFirst bool) *httptest.Server {
	return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := rpcIDOf(r)
		if id == "" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		answer := func(text string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + text + `"}]}}`
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event:"+first+"\ndata: "+answer("ignored")+"\n\n")
		if !onlyFirst {
			io.WriteString(w, "event: message\ndata: "+answer("real")+"\n\n")
		}
	}))
}

// postBatch posts body to url's /mcp as the viewer, accepting accept, and
// returns the answer's status and body.
func postBatch(t *testing.T, url, body, accept string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReview56BatchAnswerIgnoresNamedEvent: a batch member's answer is the
// first response in an event a client dispatches. Clients (the go-sdk, the
// TypeScript and the Python SDKs) skip an event named other than
// "message"; the gateway took a response in such an event ("event: foo")
// for the member's answer, relayed it, and dropped the real one after it
// as a second response: the client never got an answer. Read into a JSON
// array, the member was answered with the response its client would never
// have read.
func TestReview56BatchAnswerIgnoresNamedEvent(t *testing.T) {
	for _, mode := range []string{"plain", "pins", "filter"} {
		t.Run(mode, func(t *testing.T) {
			down := namedEventsDown(t, " foo", false)
			o := Options{Logger: discardLogger()}
			inMode(&o, mode)
			g, err := New(down.URL+"/mcp", DemoTokens(), &o)
			if err != nil {
				t.Fatal(err)
			}
			url := newServer(t, g).URL
			batch := `[` + call("1", "get_customer_record", "") + `,` + call("2", "get_customer_record", "") + `]`

			status, body := postBatch(t, url, batch, "application/json, text/event-stream")
			if status != http.StatusOK {
				t.Fatalf("merged stream: status %d %q", status, body)
			}
			for _, goSDK := range []bool{false, true} {
				got := answersByID(t, clientMessages(t, body, goSDK))
				for _, id := range []string{"1", "2"} {
					if a := got[id]; len(a) != 1 || a[0] != "real" {
						t.Errorf("merged stream, go-sdk reading %v: member %s answered %q, want once, the real answer; stream:\n%s",
							goSDK, id, a, body)
					}
				}
			}

			status, body = postBatch(t, url, batch, "application/json")
			if status != http.StatusOK {
				t.Fatalf("JSON array: status %d %q", status, body)
			}
			var arr []json.RawMessage
			if err := json.Unmarshal([]byte(body), &arr); err != nil {
				t.Fatalf("JSON array: %q: %v", body, err)
			}
			var msgs []string
			for _, m := range arr {
				msgs = append(msgs, string(m))
			}
			got := answersByID(t, msgs)
			for _, id := range []string{"1", "2"} {
				if a := got[id]; len(a) != 1 || a[0] != "real" {
					t.Errorf("JSON array: member %s answered %q, want once, the real answer; body %s", id, a, body)
				}
			}
		})
	}
}

// TestReview56BatchAnswerReadByEveryClient: a response in an event whose
// name some client reads as "message" and another does not ("message "
// with a space after it: the go-sdk trims it, the TypeScript SDK does not)
// may be taken for a member's answer, but then it is written as an event
// every client reads: relayed with its name, a TypeScript client never got
// the answer.
func TestReview56BatchAnswerReadByEveryClient(t *testing.T) {
	for _, name := range []string{" message ", "  message", "message\t"} {
		down := namedEventsDown(t, name, true)
		g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		url := newServer(t, g).URL
		batch := `[` + call("1", "get_customer_record", "") + `,` + call("2", "get_customer_record", "") + `]`
		status, body := postBatch(t, url, batch, "application/json, text/event-stream")
		if status != http.StatusOK {
			t.Fatalf("event %q: status %d %q", name, status, body)
		}
		for _, goSDK := range []bool{false, true} {
			got := answersByID(t, clientMessages(t, body, goSDK))
			for _, id := range []string{"1", "2"} {
				if a := got[id]; len(a) != 1 {
					t.Errorf("event %q, go-sdk reading %v: member %s answered %q, want once; stream:\n%s", name, goSDK, id, a, body)
				}
			}
		}
	}
}

// pinsListingDown is a downstream whose answer to every tools/list is an
// event stream: first an event named name listing the tool as tool, then
// one named message listing it as goodTool. A tools/call is answered so
// too, an error (isError) in the named event and a result in the other.
func pinsListingDown(t *testing.T, name, tool string) *httptest.Server {
	return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &m)
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if m.Method == "tools/list" {
			io.WriteString(w, "event: "+name+"\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(m.ID)+",\"result\":{\"tools\":["+tool+"]}}\n\n")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(m.ID)+",\"result\":{\"tools\":["+goodTool+"]}}\n\n")
			return
		}
		io.WriteString(w, "event: "+name+"\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(m.ID)+",\"result\":{\"content\":[],\"isError\":true}}\n\n")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(m.ID)+",\"result\":{\"content\":[]}}\n\n")
	}))
}

// TestReview56PinsIgnoreNamedEvents: with Pins (trust on first use, with
// FilterToolsList or without), a listing in an event that every client
// skips ("event: foo") is not what the pins approve: the gateway approved
// the definition it held at its first sight, so the listing the client
// reads next, a tool's other definition, was withheld as changed
// (TOOL_CHANGED), and the client never saw the tool. Nor is a response in
// such an event a tools/call's answer in its outcome record: "tool
// reported an error", from the event the client skipped, where the client
// read a result.
func TestReview56PinsIgnoreNamedEvents(t *testing.T) {
	for _, filter := range []bool{false, true} {
		down := pinsListingDown(t, "foo", poisonedTool)
		sink := &memSink{}
		g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Pins: TrustOnFirstUse(), FilterToolsList: filter, Logger: discardLogger(), Audit: sink})
		if err != nil {
			t.Fatal(err)
		}
		rg := &rig{url: newServer(t, g).URL}
		r := rg.post(t, admin, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		msgs := clientMessages(t, r.body, false)
		if r.status != http.StatusOK || len(msgs) != 1 || !strings.Contains(msgs[0], "Look up a customer.") {
			t.Errorf("filter %v: the listing the client reads: %d %q; want the tool as listed there; stream:\n%s", filter, r.status, msgs, r.body)
		}
		if strings.Contains(r.body, "id_rsa") {
			t.Errorf("filter %v: the skipped event's listing was relayed: %s", filter, r.body)
		}
		for _, e := range sink.since(0) {
			if e.Code == "TOOL_CHANGED" {
				t.Errorf("filter %v: a tool withheld as changed: %+v", filter, e)
			}
		}
		if filter {
			continue
		}
		r = rg.post(t, admin, call("2", "get_customer_record", `{"customer_id":"CUST-00001"}`))
		if r.status != http.StatusOK {
			t.Fatalf("the call: %d %s", r.status, r.body)
		}
		evs := waitOutcomes(t, sink, "get_customer_record", 1)
		if !evs[0].Allowed || evs[0].Detail != "" {
			t.Errorf("the call's outcome: allowed %v, detail %q; want allowed, no detail (the client read a result)", evs[0].Allowed, evs[0].Detail)
		}
	}
}

// TestReview56PinsCheckEventsSomeClientReads: an event whose name one
// client reads as "message" (the go-sdk trims white space around it; the
// TypeScript SDK reads "message" after one space) is checked by the pins
// and the filter, whatever its name: a changed definition in it never
// reaches the client, on a tools/list's stream (filtered or not) or on
// another request's.
func TestReview56PinsCheckEventsSomeClientReads(t *testing.T) {
	for _, name := range []string{"", "message", "  message", "message ", "message\v", "message\u00a0"} {
		for _, filter := range []bool{false, true} {
			down := sseDown(t, func(id string) string {
				return "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"tools\":[" + goodTool + "]}}\n\n" +
					"event:" + name + "\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"tools\":[" + poisonedTool + "]}}\n\n" +
					"event: foo\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"tools\":[" + poisonedTool + "]}}\n\n"
			})
			g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Pins: TrustOnFirstUse(), FilterToolsList: filter, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			rg := &rig{url: newServer(t, g).URL}
			for _, body := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":2,"method":"ping"}`} {
				r := rg.post(t, admin, body)
				if strings.Contains(r.body, "id_rsa") || !strings.Contains(r.body, "Look up a customer.") {
					t.Errorf("event %q, filter %v, %s: %d\n%s", name, filter, body, r.status, r.body)
				}
			}
		}
	}
}

// TestReview56RelayedIgnoredEventKeepsID: with Pins, an event every client
// skips keeps its id in the stream relayed (a client resumes from it) but
// not its data, which the pins did not check.
func TestReview56RelayedIgnoredEventKeepsID(t *testing.T) {
	var n atomic.Int64
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if n.Add(1) == 1 {
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":["+goodTool+"]}}\n\n")
			return
		}
		io.WriteString(w, "event: foo\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":["+poisonedTool+"]}}\n\n")
		io.WriteString(w, "event: message\nid: 8\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n")
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger(), Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	rg.post(t, admin, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	r := rg.post(t, admin, call("2", "get_customer_record", ""))
	if want := "event: foo\nid: 7\n\nevent: message\nid: 8\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n"; r.body != want {
		t.Errorf("relayed %q, want %q", r.body, want)
	}
}

// TestReview56PinsOutcomeIgnoresNamedEvent: with Pins, a tools/call's
// outcome record tells what its answer says from the response its client
// reads: a tool error in an event every client skips ("event: foo") was
// recorded as "tool reported an error", where the client read a result.
func TestReview56PinsOutcomeIgnoresNamedEvent(t *testing.T) {
	down := sseDown(t, func(id string) string {
		return "event: foo\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"content\":[],\"isError\":true}}\n\n" +
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"content\":[]}}\n\n"
	})
	sink := &memSink{}
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger(), Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	if r := rg.post(t, admin, call("2", "get_customer_record", "")); r.status != http.StatusOK {
		t.Fatalf("the call: %d %s", r.status, r.body)
	}
	evs := waitOutcomes(t, sink, "get_customer_record", 1)
	if !evs[0].Allowed || evs[0].Detail != "" {
		t.Errorf("the call's outcome: allowed %v, detail %q; want allowed, no detail (the client read a result)", evs[0].Allowed, evs[0].Detail)
	}
}
