package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestCRCRLFDoesNotBypassFilter: "\r\r\n" ends a line with a bare CR and then an
// empty line for a conforming SSE client: such a stream is refused, not
// read as one event whose joined data hides the tools/list answer.
func TestCRCRLFDoesNotBypassFilter(t *testing.T) {
	const list = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}}`
	url := filterGatewayFor(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"x\":\r\r\n"+
			"data: "+list+"\r\r\n"+
			"data: }\n\n")
	})
	got := (&rig{url: url}).post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	for _, d := range clientSSEData(got.body) {
		if strings.Contains(d, "admin_reset_key") && json.Valid([]byte(d)) {
			t.Errorf("an SSE client reads the unfiltered list (forbidden tool shown to viewer): %q\nstream: %q", d, got.body)
		}
	}
}

// TestReadEventsCRCRLF: the same at the parser: a CR before a line's CRLF is
// refused.
func TestReadEventsCRCRLF(t *testing.T) {
	var got []string
	err := readEvents(strings.NewReader("data: a\r\r\ndata: b\n\n"), func(ev *event) { got = append(got, string(ev.data)) })
	if err == nil && !(len(got) == 2 && got[0] == "a" && got[1] == "b") {
		t.Errorf("readEvents = %q, nil; want errBareCR or events [a b] as a conforming client reads them", got)
	}
}

// TestSessionKeyCollision: a client-chosen Mcp-Session-Id ("user:viewer") never
// names the limiter key of another caller without a session.
func TestSessionKeyCollision(t *testing.T) {
	rg := newRig(t, &Options{Limiter: reviewLimiter(t, limiter.Session, 1)})
	if got := rg.post(t, admin, call(`1`, "get_customer_record", ""), "Mcp-Session-Id", "user:viewer"); got.status != http.StatusOK {
		t.Fatalf("admin's call in its session \"user:viewer\": %d %s", got.status, got.body)
	}
	if got := rg.post(t, viewer, call(`2`, "get_customer_record", "")); got.status != http.StatusOK {
		t.Errorf("viewer's first stateless call: status %d, want 200 (admin's session id \"user:viewer\" shares the viewer's budget): %s", got.status, got.body)
	}
}

// TestFilteredListKeeps404: a downstream that no longer knows the session answers
// 404 with a text body, which the client needs to see to start a new
// session: the filtered path relays it (a text error has no tools to hide).
func TestFilteredListKeeps404(t *testing.T) {
	url := filterGatewayFor(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		http.Error(w, "session not found", http.StatusNotFound)
	})
	got := (&rig{url: url}).post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Mcp-Session-Id", "s-gone")
	if got.status != http.StatusNotFound {
		t.Errorf("filtered tools/list on an ended session: status %d, want 404 as the downstream said (and as unfiltered requests get): %s", got.status, got.body)
	}
}

// TestBatchLastEventWithoutBlankLine: a downstream that writes its answer as an
// event and closes the stream without the final blank line is read, as the
// go-sdk client reads it: a call that ran is not reported as failed.
func TestBatchLastEventWithoutBlankLine(t *testing.T) {
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(b, &m)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(m.ID)+",\"result\":{\"ok\":true}}\n")
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	url := newServer(t, g).URL
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(`[`+call(`1`, "get_customer_record", "")+`,`+call(`2`, "get_customer_record", "")+`]`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", viewer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), `"error"`) || !strings.Contains(string(b), `"ok":true`) {
		t.Errorf("batch answer: status %d %s; want both results (the go-sdk client reads an event the stream's end leaves without a blank line)", resp.StatusCode, b)
	}
}

// endlessLine is a stream of one line that never ends.
type endlessLine struct{}

func (endlessLine) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// TestReadEventsBoundsEventSize: an event stream whose line never ends is
// refused at the bound of a JSON answer, instead of being buffered without
// end.
func TestReadEventsBoundsEventSize(t *testing.T) {
	err := readEvents(io.MultiReader(strings.NewReader("data: "), endlessLine{}), func(*event) {
		t.Error("an event was dispatched")
	})
	if err != errEventTooLarge {
		t.Fatalf("readEvents of an endless line = %v, want errEventTooLarge", err)
	}
}
