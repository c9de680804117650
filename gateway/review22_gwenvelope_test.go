package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReview22CharsetTwiceIsRefused: a Content-Type that names the charset
// twice, once plainly and once in the RFC 2231 form (charset*= or
// charset*0=), is read by mime.ParseMediaType as the RFC 2231 value, and by
// the content-type package under the TypeScript SDK (raw-body, iconv-lite)
// and by Python's email.message (httpx) as the plain one. Said UTF-8 the
// one way and UTF-7 the other, it let the viewer's get_customer_record
// below reach the downstream, which decodes it as admin_reset_key.
func TestReview22CharsetTwiceIsRefused(t *testing.T) {
	rg := newRig(t, nil)
	smuggled := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","x":"` +
		utf7(`","name":"admin_reset_key`) + `"}}`
	for _, ct := range []string{
		"application/json; charset=utf-7; charset*=utf-8''utf-8",
		"application/json; charset*=utf-8''utf-8; charset=utf-7",
		"application/json; charset=utf-7; charset*0=utf-8",
		"application/json; charset=utf-7; charset*0=utf; charset*1=-8",
		"application/json; charset=utf-7; charset*0*=utf-8''utf-8",
	} {
		t.Run(ct, func(t *testing.T) {
			received := len(rg.down.log())
			got := rg.send(t, http.MethodPost, smuggled, "Content-Type", ct)
			if got.status != http.StatusUnsupportedMediaType {
				t.Errorf("status %d %s, want 415", got.status, got.body)
			}
			if n := len(rg.down.log()); n != received {
				t.Errorf("the downstream received %q, want nothing", rg.down.bodies()[received:])
			}
		})
	}
	// The RFC 2231 form alone, saying UTF-8, is UTF-8 for every reader
	// (one that does not know the form reads no charset: UTF-8 too).
	if got := rg.send(t, http.MethodPost, call(`1`, "get_customer_record", ""), "Content-Type", "application/json; charset*=utf-8''utf-8"); got.status != http.StatusOK {
		t.Errorf("charset*=utf-8''utf-8: status %d %s, want 200", got.status, got.body)
	}
}

// TestReview22AnswerCharsetTwice: the same on a checked answer: an event
// stream said UTF-8 in the RFC 2231 form and UTF-7 plainly is decoded by
// httpx (email.message's first charset) as UTF-7, where the gateway read
// UTF-8: the UTF-7 below adds a tool the pins do not approve.
func TestReview22AnswerCharsetTwice(t *testing.T) {
	inject := utf7(`","tools":[` + poisonedTool + `],"x":"`)
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-7; charset*=utf-8''utf-8")
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
				t.Errorf("relayed an event the gateway read as UTF-8 and httpx decodes as UTF-7: %d %.300q", r.status, r.body)
			}
		})
	}
}
