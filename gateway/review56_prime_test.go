package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestBatchPrimingEventNotLoggedDropped: a go-sdk downstream with an event
// store (protocol 2025-11-25) opens every event stream with a priming
// event, an id and an empty data field, which no client dispatches (the
// SSE algorithm drops an event whose data is empty; the go-sdk client
// skips it). A batch member answered so is answered in full; the gateway
// logged a warning "upstream answers dropped" for every such member, in a
// merged stream and in a JSON array alike, as though the downstream had
// sent a message the client could not read.
func TestBatchPrimingEventNotLoggedDropped(t *testing.T) {
	down := sseDown(t, func(id string) string {
		return "event: prime\nid: 0_0\ndata: \n\n" +
			"event: message\nid: 0_1\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{}}\n\n"
	})
	logs := &syncLog{}
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	url := newServer(t, g).URL
	batch := `[` + call("1", "get_customer_record", "") + `,` + call("2", "get_customer_record", "") + `]`
	for _, accept := range []string{"application/json, text/event-stream", "application/json"} {
		req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(batch))
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Count(string(body), `"result":{}`) != 2 {
			t.Fatalf("Accept %q: status %d, body %q: want both members' answers", accept, resp.StatusCode, body)
		}
	}
	if strings.Contains(logs.String(), "upstream answers dropped") {
		t.Errorf("a priming event was logged as an answer dropped:\n%s", logs.String())
	}
}
