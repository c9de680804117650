package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// stuckWriter is the ResponseWriter of a client that stopped reading: a
// Write past room bytes of body (room < 0: no limit), and every Flush when
// flushStuck, waits until a write deadline in the past is set (as a write
// to a full connection does), then fails, as every write does from then
// on, and a failed write ends the request's context (cancel), as
// net/http's does. Other writes are taken as buffered.
type stuckWriter struct {
	h          http.Header
	room       int
	flushStuck bool
	cancel     context.CancelFunc
	dead       chan struct{}
	once       sync.Once
}

func newStuckWriter(room int, flushStuck bool, cancel context.CancelFunc) *stuckWriter {
	return &stuckWriter{h: http.Header{}, room: room, flushStuck: flushStuck, cancel: cancel, dead: make(chan struct{})}
}

func (s *stuckWriter) Header() http.Header { return s.h }
func (s *stuckWriter) WriteHeader(int)     {}

func (s *stuckWriter) Write(p []byte) (int, error) {
	if s.room >= 0 && len(p) > s.room {
		<-s.dead
	}
	select {
	case <-s.dead:
		s.cancel()
		return 0, os.ErrDeadlineExceeded
	default:
		if s.room >= 0 {
			s.room -= len(p)
		}
		return len(p), nil
	}
}

func (s *stuckWriter) FlushError() error {
	if s.flushStuck {
		<-s.dead
	}
	select {
	case <-s.dead:
		s.cancel()
		return os.ErrDeadlineExceeded
	default:
		return nil
	}
}

func (s *stuckWriter) SetWriteDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		s.once.Do(func() { close(s.dead) })
	}
	return nil
}

// pieceBody is a downstream answer's body: its first Read waits until
// ctx (the request's) is done when waitCtx is set, then it gives the
// pieces in turn, nil errors between them, and end after the last.
type pieceBody struct {
	ctx     context.Context
	waitCtx bool
	pieces  []string
	end     error
}

func (b *pieceBody) Read(p []byte) (int, error) {
	if b.waitCtx {
		<-b.ctx.Done()
		b.waitCtx = false
	}
	if len(b.pieces) == 0 {
		return 0, b.end
	}
	n := copy(p, b.pieces[0])
	if b.pieces[0] = b.pieces[0][n:]; b.pieces[0] == "" {
		b.pieces = b.pieces[1:]
	}
	return n, nil
}

func (*pieceBody) Close() error { return nil }

// TestReview46StuckClientNeverHolds checks that every write of a relayed
// answer to a client that stopped reading is bounded by the timeout, the
// header's flush and an aborted answer's last flush included, and after
// the call's own timer ended a read too: the handler returns (or aborts
// the answer) instead of waiting on the client for good. Under load in CI,
// a read that outlasted the timeout stopped the timer that also checks the
// writes, while the read still handed over data the downstream had sent:
// the write of it to a client that read nothing held the handler.
func TestReview46StuckClientNeverHolds(t *testing.T) {
	const timeout = 100 * time.Millisecond
	answer := `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"pad":"` + strings.Repeat("a", 96<<10) + `"}}`
	type stuckCase struct {
		name       string
		mode       string // see inMode
		sse        bool
		waitCtx    bool // the body's first read waits out the call's timer
		body       string
		end        error
		room       int
		flushStuck bool
		abort      bool // the handler aborts the answer (cut short)
		// own: the handler writes an error answer of its own that fits
		// the room, with Pins or FilterToolsList on a JSON answer, read
		// whole: its read failed, so no write waits on the client.
		own bool
	}
	var cases []stuckCase
	for _, mode := range []string{"plain", "pins", "filter"} {
		for _, sse := range []bool{false, true} {
			body := answer
			if sse {
				body = "event: message\ndata: " + answer + "\n\n"
			}
			// The call's timer ends the first read; the Transport's body
			// hands over its data all the same, and the client takes
			// none of it.
			// Room for an error answer of the gateway's own (it
			// answers one after a read that timed out, where it reads
			// the answer whole), not for the downstream's answer.
			cases = append(cases, stuckCase{name: mode + " read timed out", mode: mode, sse: sse, waitCtx: true, body: body, end: io.EOF, room: 4 << 10,
				own: mode != "plain" && !sse})
		}
	}
	cases = append(cases,
		// An event stream's header is flushed at once.
		stuckCase{name: "event stream header", mode: "plain", sse: true, body: "event: message\ndata: {}\n\n", end: io.EOF, room: -1, flushStuck: true},
		// An answer cut short: what was written is flushed, then aborted.
		stuckCase{name: "cut answer", mode: "plain", body: `{"jsonrpc":"2.0","id":1,`, end: io.ErrUnexpectedEOF, room: -1, flushStuck: true, abort: true},
	)
	for _, tc := range cases {
		name := tc.name
		if tc.sse {
			name += " sse"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				io.Copy(io.Discard, r.Body)
				h := http.Header{"Content-Type": {"application/json"}}
				if tc.sse {
					h.Set("Content-Type", "text/event-stream")
				}
				var pieces []string
				for b := tc.body; b != ""; b = b[min(len(b), 16<<10):] {
					pieces = append(pieces, b[:min(len(b), 16<<10)])
				}
				body := &pieceBody{ctx: r.Context(), waitCtx: tc.waitCtx, pieces: pieces, end: tc.end}
				return &http.Response{StatusCode: 200, Header: h, Body: body, ContentLength: -1, Request: r}, nil
			})
			o := Options{Timeout: timeout, Transport: rt, Logger: discardLogger()}
			rb := inMode(&o, tc.mode)
			g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &o)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(rb))
			req.Header.Set("Authorization", "Bearer admin-token")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			w := newStuckWriter(tc.room, tc.flushStuck, cancel)
			done := make(chan any, 1)
			go func() {
				defer func() { done <- recover() }()
				g.ServeHTTP(w, req)
			}()
			var want any // the handler's panic: none, or the abort of a cut answer
			if tc.abort {
				want = http.ErrAbortHandler
			}
			select {
			case p := <-done:
				if p != want {
					t.Fatalf("the handler ended with panic %v, want %v", p, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the handler still waits on a client that reads nothing 10 s on (timeout %v)", timeout)
			}
			select {
			case <-w.dead:
				if tc.own {
					t.Fatal("a write waited on the client; want an error answer of the gateway's own, which fits")
				}
			default:
				if !tc.own {
					t.Fatal("the handler returned without a write that waited on the client")
				}
			}
		})
	}
}
