package stdio

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCount(t *testing.T) {
	tests := []struct {
		name          string
		line          string
		req, response int
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 1, 0},
		{"string_id_request", `{"jsonrpc":"2.0","id":"a","method":"ping"}`, 1, 0},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, 0},
		{"null_id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, 0, 0},
		{"result", `{"jsonrpc":"2.0","id":1,"result":{}}`, 0, 1},
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`, 0, 1},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"result":{}}]`, 1, 1},
		{"not_json", `{not json`, 0, 0},
		{"blank", `  `, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, res := count([]byte(tt.line))
			if req != tt.req || res != tt.response {
				t.Errorf("count(%s) = %d, %d; want %d, %d", tt.line, req, res, tt.req, tt.response)
			}
		})
	}
}

func TestLinesFeed(t *testing.T) {
	var l lines
	var got []string
	fn := func(b []byte) { got = append(got, string(b)) }
	for _, chunk := range []string{"ab", "c\nde", "f\n\ng", "h\n"} {
		l.feed([]byte(chunk), fn)
	}
	if diff := cmp.Diff([]string{"abc", "def", "", "gh"}, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}

	got = nil
	l.feed([]byte(strings.Repeat("x", maxTrackedLine)), fn)
	l.feed([]byte("yy\nok\n"), fn)
	if diff := cmp.Diff([]string{"ok"}, got); diff != "" {
		t.Errorf("after an overlong line (-want +got):\n%s", diff)
	}
}

func TestInflightWait(t *testing.T) {
	f := newInflight()
	f.add(2)
	go func() {
		f.done(1)
		f.done(1)
	}()
	start := time.Now()
	f.wait(10 * time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("wait returned after %v although every request was answered", d)
	}

	f.add(1)
	start = time.Now()
	f.wait(50 * time.Millisecond)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("wait with an unanswered request returned after %v, before its timeout", d)
	}
}
