package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// TestMergedStreamMultiLineJSONAnswer: in a batch whose answer is a merged
// event stream (one member answered with a stream), a member the
// downstream answered with a JSON body spread over lines (pretty-printed,
// with LF, CRLF or a lone CR between its tokens, all JSON white space)
// reaches the client as one whole message. Written as one data field, the
// lines after its first ended the field for every SSE client: the client
// read "{" as the member's answer, and never got it.
func TestMergedStreamMultiLineJSONAnswer(t *testing.T) {
	answers := map[string]string{
		"2": "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 2,\n\n  \"result\": {\"ok\": 2}\n}\n",
		"3": "{\r\n\"jsonrpc\":\"2.0\",\r\n\"id\":3,\"result\":{\"ok\":3}}",
		"4": "{\r\"jsonrpc\":\"2.0\",\r\"id\":4,\"result\":{\"ok\":4}\r}",
	}
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, ok := answers[rpcIDOf(r)]; ok {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, a)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":1}}\n\n")
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	batch := `[` + call("1", "get_customer_record", "") + `,` + call("2", "get_customer_record", "") + `,` +
		call("3", "get_customer_record", "") + `,` + call("4", "get_customer_record", "") + `]`
	rep := rg.post(t, viewer, batch)
	if rep.status != http.StatusOK || rep.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q: want a merged event stream", rep.status, rep.header.Get("Content-Type"))
	}
	got := map[string]int{}
	for _, d := range clientSSEData(rep.body) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				OK int `json:"ok"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(d), &m); err != nil {
			t.Errorf("the client reads event data %q, which is not a message: %v", d, err)
			continue
		}
		got[string(m.ID)] = m.Result.OK
	}
	for id, ok := range map[string]int{"1": 1, "2": 2, "3": 3, "4": 4} {
		if got[id] != ok {
			t.Errorf("member %s: the client read result ok=%d, want %d (stream %q)", id, got[id], ok, rep.body)
		}
	}
}
