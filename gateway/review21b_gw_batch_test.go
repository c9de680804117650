package gateway

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// shapesDownstream answers a batch member by its tool's name (or, for a
// tools/list, its id): "echo" JSON, "sse" and a tools/list of id 77 an
// event stream, "later" JSON after 300 ms, "broken" a 500 in plain text;
// a notification 202.
func shapesDownstream(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	json.Unmarshal(body, &msg)
	if msg.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result := `{"content":[]}`
	if msg.Method == "tools/list" {
		result = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
	}
	answer := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":` + result + `}`
	switch {
	case msg.Params.Name == "sse" || msg.Method == "tools/list" && string(msg.ID) == "77":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
		return
	case msg.Params.Name == "broken":
		http.Error(w, "downstream broke", http.StatusInternalServerError)
		return
	case msg.Params.Name == "later":
		time.Sleep(300 * time.Millisecond)
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, answer)
}

// TestReview21bBatchMembersFinish checks that every forwarded member of a
// batch finishes, whatever the batch's shape: its in-flight place is given
// back (the same user's next call, under a concurrency cap of 1, is
// answered 200) and its outcome record is written, once.
func TestReview21bBatchMembersFinish(t *testing.T) {
	note := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	list := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	for _, tc := range []struct {
		name  string
		mode  string // "", "filter", "pins"
		batch string
		tools []string // the tools/call members, each recorded once
		gone  bool     // the client hangs up once the batch is sent
	}{
		{name: "one_member", batch: call(`1`, "echo", ""), tools: []string{"echo"}},
		// The second call is refused here: the cap is 1.
		{name: "refused_beside_forwarded", batch: call(`1`, "echo", "") + "," + call(`2`, "echo", "") + `,{"jsonrpc":"2.0","id":3,"method":5}`,
			tools: []string{"echo", "echo"}},
		{name: "notification_call", batch: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{}}}`, tools: []string{"echo"}},
		{name: "notification_beside", batch: note + "," + call(`1`, "echo", ""), tools: []string{"echo"}},
		{name: "every_member_refused", batch: `{"jsonrpc":"2.0","id":3,"method":5},7`},
		{name: "broken_answer", batch: call(`1`, "broken", ""), tools: []string{"broken"}},
		{name: "sse", batch: call(`1`, "sse", ""), tools: []string{"sse"}},
		{name: "sse_after_json", batch: call(`1`, "echo", "") + `,{"jsonrpc":"2.0","id":77,"method":"tools/list"}`, tools: []string{"echo"}},
		{name: "filtered_list", mode: "filter", batch: list + "," + call(`1`, "echo", ""), tools: []string{"echo"}},
		{name: "filtered_list_sse", mode: "filter", batch: `{"jsonrpc":"2.0","id":77,"method":"tools/list"},` + call(`1`, "later", ""), tools: []string{"later"}},
		{name: "pins", mode: "pins", batch: list + "," + call(`1`, "echo", ""), tools: []string{"echo"}},
		{name: "pins_sse", mode: "pins", batch: call(`1`, "sse", "") + "," + call(`2`, "echo", ""), tools: []string{"sse", "echo"}},
		{name: "gone_before_write", batch: call(`1`, "later", ""), tools: []string{"later"}, gone: true},
		{name: "gone_before_write_sse", batch: call(`1`, "later", "") + `,{"jsonrpc":"2.0","id":77,"method":"tools/list"}`, tools: []string{"later"}, gone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			down := newServer(t, http.HandlerFunc(shapesDownstream))
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			o := Options{Timeout: 3 * time.Second, Logger: discardLogger(), Limiter: lim, Audit: sink}
			inMode(&o, tc.mode)
			g, err := New(down.URL+"/mcp", DemoTokens(), &o)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{}, 4)
			gw := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer func() { done <- struct{}{} }()
				g.ServeHTTP(w, r)
			}))
			rg := &rig{url: gw.URL}
			body := "[" + tc.batch + "]"
			if tc.gone {
				c, err := net.Dial("tcp", gw.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+gw.Listener.Addr().String()+"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
					"Authorization: "+admin+"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
				time.Sleep(100 * time.Millisecond) // sent downstream
				c.Close()
			} else if got := rg.post(t, admin, body); got.status != http.StatusOK && got.status != http.StatusAccepted {
				t.Fatalf("the batch: %d %.300s", got.status, got.body)
			}
			select {
			case <-done:
			case <-time.After(8 * time.Second):
				t.Fatal("the batch's handler still runs after 8 s")
			}
			want := map[string]int{}
			for _, tool := range tc.tools {
				want[tool]++
			}
			for tool, n := range want {
				if evs := sink.outcomes(tool); len(evs) != n {
					t.Errorf("%d outcome records of %s after the batch, want %d: %+v", len(evs), tool, n, evs)
				} else if tc.gone && (!evs[0].Allowed || evs[0].Detail != clientGone) {
					t.Errorf("the record of a member whose client went away: allowed %v, code %q, detail %q; want allowed, detail %q",
						evs[0].Allowed, evs[0].Code, evs[0].Detail, clientGone)
				}
			}
			if got := rg.post(t, admin, call(`9`, "next", "")); got.status != http.StatusOK {
				t.Fatalf("the next call of the same user: %d %.300s; want 200 (the batch's in-flight places given back)", got.status, got.body)
			}
			<-done
			if evs := sink.outcomes("next"); len(evs) != 1 || !evs[0].Allowed {
				t.Errorf("the next call's records: %+v; want one, allowed", evs)
			}
		})
	}
}
