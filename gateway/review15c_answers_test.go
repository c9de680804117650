package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// fixedGoodPins approves goodTool only.
func fixedGoodPins(t *testing.T) *Pins {
	t.Helper()
	pins, err := ParsePins([]byte(`{"get_customer_record":"` + ToolDigest(json.RawMessage(goodTool)) + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	return pins
}

// gzipEvents is what a hostile downstream sends with Content-Encoding gzip:
// events compressed so that the compressed bytes, read as an event stream,
// are only comments and unknown fields (no data line, no CR, no run of blank
// lines) ended by a blank line, which a gateway reading them as such relays
// byte for byte. The events are flushed before the blank line, as a server
// flushes each event, so a client inflates them although the stream's tail
// (a line without its end) is not relayed.
func gzipEvents(t *testing.T, events string) []byte {
	t.Helper()
	for n := range 100000 {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		fmt.Fprintf(zw, ": %d\n\n%s", n, events)
		zw.Flush()
		// A stored block, "\n\n": the blank line that ends, for a reader
		// of the compressed bytes, the event they make up.
		buf.Write([]byte{0x00, 0x02, 0x00, 0xfd, 0xff, '\n', '\n'})
		io.WriteString(zw, ": tail\n\n")
		zw.Close()
		b := buf.Bytes()
		if bytes.IndexByte(b, '\r') >= 0 || bytes.Contains(b, []byte("\n\n\n")) {
			continue
		}
		ok := true
		for l := range bytes.SplitSeq(b, []byte("\n")) {
			if bytes.HasPrefix(l, []byte("data")) || bytes.HasPrefix(l, []byte("id")) || bytes.HasPrefix(l, []byte("retry")) {
				ok = false
				break
			}
		}
		if ok {
			return b
		}
	}
	t.Fatal("no compressed stream that reads as comments")
	return nil
}

// TestCheckedAnswerEncoded: an answer the gateway must read (with pins, any
// answer; with pins or FilterToolsList, a tools/list's) that the downstream
// sends compressed (Content-Encoding gzip) is not relayed: the gateway
// would check the compressed bytes, and the client (net/http, fetch, httpx
// all inflate gzip) would read the listing inside unchecked.
func TestCheckedAnswerEncoded(t *testing.T) {
	answer := gzipEvents(t, "event: message\ndata: "+rugListing("7")+"\n\nevent: message\ndata: "+
		`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`+"\n\n")
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(answer)
	}))
	list := `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`
	for _, tc := range []struct{ name, method, body string }{
		{"call_sse", http.MethodPost, call(`3`, "get_customer_record", `{}`)},
		{"list_sse", http.MethodPost, list},
		{"batch_sse", http.MethodPost, `[` + call(`3`, "get_customer_record", `{}`) + `,{"jsonrpc":"2.0","id":4,"method":"ping"}]`},
		{"get_stream", http.MethodGet, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Pins: fixedGoodPins(t), Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			req, _ := http.NewRequest(tc.method, gw.URL+"/mcp", strings.NewReader(tc.body))
			req.Header.Set("Authorization", admin)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			// No Accept-Encoding: net/http asks for gzip and inflates it.
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body) // a cut gzip stream ends in an error
			resp.Body.Close()
			if strings.Contains(string(b), "id_rsa") {
				t.Errorf("the changed definition reached the client inside a gzip answer: %d %.300q", resp.StatusCode, b)
			}
		})
	}
}

// TestCheckedAnswerAcceptEncoding: the gateway asks the downstream for an
// answer it can read, unencoded (Accept-Encoding: identity): without the
// header any coding is acceptable (RFC 9110 §12.5.3).
func TestCheckedAnswerAcceptEncoding(t *testing.T) {
	rg := newRig(t, nil)
	if r := rg.post(t, viewer, call(`1`, "get_customer_record", `{}`), "Accept-Encoding", "gzip, br"); r.status != 200 {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	if got := rg.down.log()[0].Header.Values("Accept-Encoding"); len(got) != 1 || got[0] != "identity" {
		t.Errorf("Accept-Encoding sent downstream %q, want [identity]", got)
	}
}

// TestCheckedAnswerCharset: an event stream the gateway must read whose
// Content-Type names another charset than UTF-8 is not relayed: the gateway
// reads its bytes as UTF-8, a client that decodes it in the charset named
// reads other messages. Here UTF-7 closes a string the gateway read and
// adds tools to the result.
func TestCheckedAnswerCharset(t *testing.T) {
	inject := utf7(`","tools":[` + poisonedTool + `],"x":"`)
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-7")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[],\"x\":\""+inject+"\"}}\n\n")
	}))
	for _, tc := range []struct{ name, body string }{
		{"call", call(`3`, "get_customer_record", `{}`)},
		{"list", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Pins: fixedGoodPins(t), Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			rg := &rig{url: newServer(t, g).URL}
			if r := rg.post(t, admin, tc.body); strings.Contains(r.body, inject) {
				t.Errorf("relayed an event the gateway read as UTF-8 and the client decodes as UTF-7: %d %.300q", r.status, r.body)
			}
		})
	}
}

// pyLines splits an event stream into lines as httpx's line decoder does
// (and so the Python SDK's client, through httpx-sse up to 0.4.1): on
// CR, LF and CRLF, and also on VT, FF, FS, GS, RS, NEL, U+2028 and U+2029
// (str.splitlines).
func pyLines(s string) []string {
	return strings.FieldsFunc(strings.ReplaceAll(s, "\r\n", "\n"), func(r rune) bool {
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			return true
		}
		return false
	})
}

// TestCheckedEventUnicodeLineBreaks: with pins, a line of a checked event
// stream that is not a data line (a comment, an event name, an id) is not
// relayed with a character some clients end a line at and the gateway does
// not (httpx splits lines as str.splitlines does): after it, such a client
// reads a data line the gateway took for part of a comment (or of a field
// whose name only starts with "data").
func TestCheckedEventUnicodeLineBreaks(t *testing.T) {
	for _, tc := range []struct{ name, sep string }{
		{"line_separator", "\u2028"},
		{"paragraph_separator", "\u2029"},
		{"next_line", "\u0085"},
		{"file_separator", "\x1c"},
		{"vertical_tab", "\v"},
	} {
		// dataX is a field of its own, not a data field, though it starts
		// with "data".
		for _, f := range []struct{ name, line string }{{"comment", ": ok"}, {"event", "event: message"}, {"data_prefixed_field", "dataX: ok"}} {
			field := f.line
			t.Run(tc.name+"_"+f.name, func(t *testing.T) {
				down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, field+tc.sep+tc.sep+"data: "+rugListing("7")+tc.sep+tc.sep+"\n\n"+
						"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}\n\n")
				}))
				g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Pins: fixedGoodPins(t), Logger: discardLogger()})
				if err != nil {
					t.Fatal(err)
				}
				rg := &rig{url: newServer(t, g).URL}
				r := rg.post(t, admin, call(`3`, "get_customer_record", `{}`))
				for _, l := range pyLines(r.body) {
					if strings.HasPrefix(l, "data") && strings.Contains(l, "id_rsa") {
						t.Errorf("a client splitting lines as httpx does reads the data line %.80q...", l)
					}
				}
				if !strings.Contains(r.body, `"result":{"content":[]}`) {
					t.Errorf("the call's own answer was not relayed: %d %.300q", r.status, r.body)
				}
			})
		}
	}
}
