package stdio

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLinesFeed(t *testing.T) {
	l := lines{max: 8}
	var got []string
	fn := func(b []byte, tooLong bool) {
		if tooLong {
			got = append(got, "<too long>")
			return
		}
		got = append(got, string(b))
	}
	for _, chunk := range []string{"ab", "c\nde", "f\n\ng", "h\n"} {
		l.feed([]byte(chunk), fn)
	}
	if diff := cmp.Diff([]string{"abc", "def", "", "gh"}, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}

	got = nil
	l.feed([]byte(strings.Repeat("x", 8)), fn)
	if !l.over && len(l.partial) == 0 {
		t.Error("the splitter holds nothing inside a line")
	}
	l.feed([]byte("yy\nok\nlast"), fn)
	l.flush(fn)
	if diff := cmp.Diff([]string{"<too long>", "ok", "last"}, got); diff != "" {
		t.Errorf("after an overlong line (-want +got):\n%s", diff)
	}
	if l.over || len(l.partial) > 0 {
		t.Errorf("after flush: over %t, %d bytes held; want false, 0", l.over, len(l.partial))
	}
}

// TestSessionUnanswered: the count of requests in flight, and the channel
// the reader's drain waits on, closed by the answer that shrinks it. (The
// drain's timeout and Close are the reader's: see TestStopBoundedByDrainTimeout
// and TestIsolateStdinClosedMidCall.)
func TestSessionUnanswered(t *testing.T) {
	s := newSession()
	if e := s.admit([]info{{request: true, id: idKey{set: true, n: 1}}}, false); e != nil {
		t.Fatal(e.reason)
	}
	if e := s.admit([]info{{request: true, id: idKey{set: true, n: 2}}}, false); e != nil {
		t.Fatal(e.reason)
	}
	n, changed := s.unanswered()
	if n != 2 {
		t.Fatalf("unanswered() = %d, want 2", n)
	}
	s.sent([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`))
	select {
	case <-changed:
		t.Fatal("a notification closed the channel")
	default:
	}
	s.sent([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("an answer did not close the channel")
	}
	n, changed = s.unanswered()
	s.sent([]byte(`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"x"}}`))
	<-changed
	if n2, _ := s.unanswered(); n != 1 || n2 != 0 {
		t.Errorf("unanswered() = %d, then %d; want 1, then 0", n, n2)
	}
}

// TestSessionSentCounts: only responses with an id answer requests; a
// notification, a request to the client and a batch count as they should.
func TestSessionSentCounts(t *testing.T) {
	tests := []struct {
		name string
		line string
		want int // answered
	}{
		{"result", `{"jsonrpc":"2.0","id":1,"result":{}}`, 1},
		{"string_id_error", `{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"x"}}`, 1},
		{"null_id_error", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}`, 0},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/message"}`, 0},
		{"request_to_client", `{"jsonrpc":"2.0","id":7,"method":"roots/list"}`, 0},
		{"batch", `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]`, 2},
		{"not_json", `{not json`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession()
			for _, id := range []idKey{{set: true, n: 1}, {set: true, n: 2}, {set: true, n: 7}, {set: true, isStr: true, s: "a"}} {
				s.pending[id] = true
			}
			before := len(s.pending)
			s.sent([]byte(tt.line))
			if got := before - len(s.pending); got != tt.want {
				t.Errorf("sent(%s) answered %d requests, want %d", tt.line, got, tt.want)
			}
		})
	}
}

// TestSessionBatches: batches pass until an initialize is passed, then
// once its answer gives a protocol version that has them; they never repeat
// an id the go-sdk tracks.
func TestSessionBatches(t *testing.T) {
	req := func(id int64) info { return info{request: true, id: idKey{set: true, n: id}} }
	notification := info{request: true}
	initialize := func(version string) info {
		return info{request: true, id: idKey{set: true, n: 1}, method: "initialize", params: []byte(`{"protocolVersion":"` + version + `"}`)}
	}
	type step struct {
		admit []info // a batch to admit, or
		init  string // an initialize request asking for this version, or
		sent  string // a line the server writes
		ok    bool   // for admit: want it admitted
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"before_initialize", []step{{admit: []info{req(1), req(2)}, ok: true}}},
		{"duplicate_id", []step{{admit: []info{req(1), req(1)}}}},
		{"two_notifications", []step{{admit: []info{notification, notification}}}},
		{"id_in_flight", []step{{admit: []info{req(1)}, ok: true}, {admit: []info{req(1)}}}},
		{"id_answered", []step{
			{admit: []info{req(1)}, ok: true},
			{sent: `[{"jsonrpc":"2.0","id":1,"result":{}}]`},
			{admit: []info{req(1)}, ok: true},
		}},
		{"notification_tracked_forever", []step{
			{admit: []info{notification}, ok: true},
			{sent: `[{"jsonrpc":"2.0","id":1,"result":{}}]`},
			{admit: []info{notification}},
		}},
		{"asked_2025_11_25", []step{{init: "2025-11-25"}, {admit: []info{req(2)}}}},
		{"asked_2025_03_26_unanswered", []step{{init: "2025-03-26"}, {admit: []info{req(2)}}}},
		{"answered_2025_03_26", []step{
			{init: "2025-03-26"},
			{sent: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26"}}`},
			{admit: []info{req(2)}, ok: true},
		}},
		{"negotiated_down", []step{
			{init: "2025-03-26"},
			{sent: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`},
			{admit: []info{req(2)}},
		}},
		// The go-sdk may have negotiated before the error (a middleware
		// that fails after its handler): the version is unknown.
		{"initialize_refused", []step{
			{init: "2025-11-25"},
			{sent: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}`},
			{admit: []info{req(2)}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession()
			for i, st := range tt.steps {
				switch {
				case st.init != "":
					if e := s.admit([]info{initialize(st.init)}, false); e != nil {
						t.Fatalf("step %d: initialize refused: %s", i, e.reason)
					}
				case st.sent != "":
					s.sent([]byte(st.sent))
				default:
					e := s.admit(st.admit, true)
					if (e == nil) != st.ok {
						t.Errorf("step %d: admit(batch %+v) = %v, want admitted %t", i, st.admit, e, st.ok)
					}
				}
			}
		})
	}
}
