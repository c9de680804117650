package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// clientSSEData parses an event stream as the WHATWG server-sent events
// algorithm does (what a browser, eventsource-parser in the TypeScript MCP
// SDK, and other conforming clients do): one leading BOM ignored; lines end
// in CRLF, LF or CR; "field: value" with one optional space; consecutive data
// fields joined by "\n"; a blank line dispatches; an event not terminated by
// a blank line at the end of the stream is discarded. It returns the data of
// every dispatched event.
func clientSSEData(stream string) []string {
	stream = strings.TrimPrefix(stream, "\ufeff")
	var out []string
	var data []string
	hasData := false
	for len(stream) > 0 {
		i := strings.IndexAny(stream, "\r\n")
		if i < 0 {
			break // the last line has no ending: the event is incomplete
		}
		line := stream[:i]
		if stream[i] == '\r' && i+1 < len(stream) && stream[i+1] == '\n' {
			stream = stream[i+2:]
		} else {
			stream = stream[i+1:]
		}
		if line == "" {
			if hasData {
				out = append(out, strings.Join(data, "\n"))
			}
			data, hasData = nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		if name == "data" {
			data = append(data, value)
			hasData = true
		}
	}
	return out
}

// filterGatewayFor returns the URL of a gateway filtering tools/list in
// front of h.
func filterGatewayFor(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	down := newServer(t, h)
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), FilterToolsList: true})
	if err != nil {
		t.Fatal(err)
	}
	return newServer(t, g).URL
}

// TestFilteredSSEMultiLineData: a tools/list answer whose data spans several data
// lines (pretty-printed JSON, which SSE allows) reaches the client as one
// event whose data is the filtered JSON, one data line per line.
func TestFilteredSSEMultiLineData(t *testing.T) {
	pretty := "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"result\": {\n    \"tools\": [\n      {\n        \"name\": \"get_customer_record\"\n      },\n      {\n        \"name\": \"admin_reset_key\"\n      }\n    ]\n  }\n}"
	url := filterGatewayFor(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		var b strings.Builder
		b.WriteString("event: message\n")
		for _, l := range strings.Split(pretty, "\n") {
			b.WriteString("data: " + l + "\n")
		}
		b.WriteString("\n")
		io.WriteString(w, b.String())
	})
	got := (&rig{url: url}).post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	events := clientSSEData(got.body)
	if len(events) != 1 {
		t.Fatalf("client sees %d events, want 1; stream:\n%q", len(events), got.body)
	}
	var m struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(events[0]), &m); err != nil {
		t.Fatalf("the filtered answer is not JSON to an SSE client: %v\nevent data: %q\nstream: %q", err, events[0], got.body)
	}
	if len(m.Result.Tools) != 1 || m.Result.Tools[0].Name != "get_customer_record" {
		t.Errorf("tools = %+v, want only get_customer_record", m.Result.Tools)
	}
}

// TestFilteredSSEParsedLikeClients: the gateway reads an event stream as a conforming
// client does (a leading byte order mark ignored), or refuses it (a bare CR
// line ending): a tools/list answer the client reads is never relayed
// unfiltered.
func TestFilteredSSEParsedLikeClients(t *testing.T) {
	const list = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}}`
	for _, tc := range []struct{ name, stream string }{
		{"leading_bom", "\ufeffdata: " + list + "\n\n"},
		{"cr_line_endings", "event: message\rdata: " + list + "\r\r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := filterGatewayFor(t, func(w http.ResponseWriter, r *http.Request) {
				io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tc.stream)
			})
			got := (&rig{url: url}).post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			for _, d := range clientSSEData(got.body) {
				if strings.Contains(d, "admin_reset_key") {
					t.Errorf("an SSE client reads the unfiltered list (forbidden tool shown to viewer): %q", d)
				}
			}
		})
	}
}

// TestFilteredJSONArrayAnswer: a JSON answer to a single tools/list that is an array of
// responses (the TypeScript MCP client accepts one) is filtered too.
func TestFilteredJSONArrayAnswer(t *testing.T) {
	const list = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}}`
	url := filterGatewayFor(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "["+list+"]")
	})
	got := (&rig{url: url}).post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if strings.Contains(got.body, "admin_reset_key") {
		t.Errorf("status %d: the array answer reaches the viewer unfiltered: %s", got.status, got.body)
	}
}

// TestBatchSSETruncatedMemberStream: in a merged event stream, a member whose downstream
// stream ends in the middle of an event (no blank line) does not glue
// that fragment onto the next event: the incomplete event is dropped, as
// the SSE specification says.
func TestBatchSSETruncatedMemberStream(t *testing.T) {
	cutDone := make(chan struct{})
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if strings.Contains(string(b), `"cut"`) {
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"res")
			w.(http.Flusher).Flush()
			close(cutDone)
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-cutDone:
		case <-time.After(2 * time.Second):
		}
		time.Sleep(50 * time.Millisecond)
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n")
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	got := rg.post(t, viewer, `[`+call(`1`, "cut", "")+`,`+call(`2`, "whole", "")+`]`)
	ids := map[string]bool{}
	for _, d := range clientSSEData(got.body) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(d), &m); err != nil {
			t.Errorf("the client reads an event whose data is not JSON: %q", d)
			continue
		}
		ids[string(m.ID)] = true
	}
	if !ids["1"] || !ids["2"] {
		t.Errorf("answers for ids %v, want 1 (an upstream error) and 2; stream:\n%q", ids, got.body)
	}
}
