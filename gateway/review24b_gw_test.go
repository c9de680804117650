package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// pieces is a request body that arrives in pieces of at most n bytes and
// reports its end with its last piece (eofWithData, as net/http's body of
// a declared length does) or after it.
type pieces struct {
	s           string
	n           int
	eofWithData bool
}

func (p *pieces) Read(b []byte) (int, error) {
	if p.s == "" {
		return 0, io.EOF
	}
	k := copy(b[:min(len(b), p.n)], p.s)
	p.s = p.s[k:]
	if p.s == "" && p.eofWithData {
		return k, io.EOF
	}
	return k, nil
}

// TestReview24bBodyBufferNotDoubled: since the POST buffer grows with what
// arrives, a body of MaxBodyBytes (4 MiB) sent in pieces, as a network
// delivers it, grew the buffer to 8 MiB (bytes.Buffer.ReadFrom keeps 512
// bytes free, so a full buffer doubles before it sees the end): twice what
// the declared length reserved before, for every full-size request, and for
// a client with no token that sends all of it but a few bytes and stalls.
// The buffer never grows past the declared length (or MaxBodyBytes) now.
func TestReview24bBodyBufferNotDoubled(t *testing.T) {
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	const max = 4 << 20
	for _, size := range []int{max, max - 100, 1 << 20, 100<<10 + 1, 2} {
		for _, eof := range []bool{true, false} {
			for _, declared := range []bool{true, false} {
				body := strings.Repeat("x", size)
				r := httptest.NewRequest(http.MethodPost, "/mcp", &pieces{s: body, n: 1000, eofWithData: eof})
				r.ContentLength = -1
				limit := max // a chunked body: MaxBodyBytes bounds it
				if declared {
					r.ContentLength, limit = int64(size), size
				}
				buf, e := g.readBody(r)
				if e != nil {
					t.Fatalf("size %d: %s", size, e.message)
				}
				if buf.String() != body {
					t.Fatalf("size %d: read %d bytes, not the body", size, buf.Len())
				}
				// Large allocations are rounded up to 8 KiB pages.
				if buf.Cap() > limit+8<<10 && buf.Cap() > 64<<10 {
					t.Errorf("size %d (declared %v, EOF with data %v): buffer of %d bytes", size, declared, eof, buf.Cap())
				}
			}
		}
	}
	// Over the limit, declared or not, and a body longer than it declares
	// (only an in-process caller can send one).
	for _, cl := range []int64{-1, 10} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", &pieces{s: strings.Repeat("x", max+1), n: 1000})
		r.ContentLength = cl
		if _, e := g.readBody(r); e == nil || e.status != http.StatusRequestEntityTooLarge {
			t.Errorf("declared %d, sent MaxBodyBytes+1: %v", cl, e)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", &pieces{s: strings.Repeat("x", 70<<10), n: 1000})
	r.ContentLength = 10
	if buf, e := g.readBody(r); e != nil || buf.Len() != 70<<10 {
		t.Errorf("declared 10, sent 70 KiB: %v", e)
	}
}

// TestReview24bBodyBufferOverNetwork: the same over a real connection, the
// last piece of a 4 MiB body delayed as a network may.
func TestReview24bBodyBufferOverNetwork(t *testing.T) {
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	caps := make(chan int, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf, e := g.readBody(r)
		if e != nil {
			caps <- -1
			return
		}
		caps <- buf.Cap()
	}))
	defer srv.Close()
	const size = 4 << 20
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size)
	body := []byte(strings.Repeat("x", size))
	for len(body) > 0 {
		n := min(1000, len(body))
		if n == len(body) {
			time.Sleep(50 * time.Millisecond) // the handler has read all before
		}
		if _, err := c.Write(body[:n]); err != nil {
			t.Fatal(err)
		}
		body = body[n:]
	}
	if got := <-caps; got < 0 || got > size+8<<10 {
		t.Errorf("a 4 MiB body sent in pieces: buffer of %d bytes", got)
	}
}

// failingStore is a limiter store that always fails; cancel, when set, is
// called first (the client leaves while the store is asked).
type failingStore struct{ cancel func() }

func (s failingStore) Apply(context.Context, time.Time, *limiter.Batch) error {
	if s.cancel != nil {
		s.cancel()
	}
	return errors.New("store down")
}

// TestReview24bLimiterFailedOncePerCall: a failing store is logged once for
// each call it failed, batch members included, and not for a call whose
// client had left (recorded as its leaving).
func TestReview24bLimiterFailedOncePerCall(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}},
		&limiter.Options{Store: failingStore{}})
	if err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, &Options{Limiter: lim})
	rg.post(t, admin, "["+call(`1`, "get_customer_record", `{}`)+","+call(`2`, "get_customer_record", `{}`)+","+
		call(`3`, "admin_reset_key", `{}`)+"]")
	if n := strings.Count(rg.logs.String(), `msg="limiter failed"`); n != 3 {
		t.Errorf("a batch of three calls: %d limiter failure lines; want 3:\n%s", n, rg.logs)
	}

	var logs bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lim, err = limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}},
		&limiter.Options{Store: failingStore{cancel: cancel}, FailOpenReads: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Limiter: lim, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(call(`1`, "get_customer_record", `{}`)))
	r.Header.Set("Authorization", admin)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	g.ServeHTTP(httptest.NewRecorder(), r)
	if strings.Contains(logs.String(), "limiter failed") {
		t.Errorf("a call whose client left while the store was asked was logged as the limiter's failure:\n%s", &logs)
	}
}

// TestReview24bDenyReasonCannotForgeLines: a refusal's reason holding a
// client's text (an HTTP method, a tool name, a member name) stays on its
// line, quoted.
func TestReview24bDenyReasonCannotForgeLines(t *testing.T) {
	rg := newRig(t, nil)
	rg.post(t, viewer, call(`1`, `admin_x\" level=ERROR msg=forged \u2028 x`, `{}`))
	rg.post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","NAME":"b\n level=ERROR"}}`)
	rg.post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"iD\u0000\n level=ERROR":1}`)
	req, _ := http.NewRequest("PATCH", rg.url+"/mcp", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	for _, line := range strings.Split(strings.TrimSpace(rg.logs.String()), "\n") {
		if !strings.HasPrefix(line, "time=") || strings.Contains(line, "msg=forged") {
			t.Errorf("log line %q", line)
		}
	}
	if n := strings.Count(rg.logs.String(), "reason="); n != 4 {
		t.Errorf("%d deny lines with a reason; want 4:\n%s", n, rg.logs)
	}
}
