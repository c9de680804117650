package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// r58yBody is a downstream's event stream that gives first, then, on the
// next read, runs before (EndStreams) and ends (io.EOF): the downstream
// closed its stream inside a line just as EndStreams ran.
type r58yBody struct {
	first  string
	before func()
	read   bool
}

func (b *r58yBody) Read(p []byte) (int, error) {
	if !b.read {
		b.read = true
		return copy(p, b.first), nil
	}
	b.before()
	return 0, io.EOF
}

func (b *r58yBody) Close() error { return nil }

// TestReview58yEndedInLineAsEndStreamsRan: a GET stream whose downstream
// ended inside a line (io.EOF, not a read error) while EndStreams ran is
// cut, so the client reads an error, not a clean end after a cut line (a
// go-sdk client would dispatch the cut event and fail its session). The
// test of 27bb9c5, which came without one: before it, the client read a
// clean end.
func TestReview58yEndedInLineAsEndStreamsRan(t *testing.T) {
	var g *Gateway
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{"Content-Type": {"text/event-stream"}},
			Body:          &r58yBody{first: "id: 1\ndata: {\"jsonrpc\":", before: func() { g.EndStreams() }},
			ContentLength: -1, Request: r,
		}, nil
	})
	var err error
	g, err = New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Timeout: 20 * time.Second, Logger: discardLogger(), Transport: rt})
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, g)
	req, _ := http.NewRequest(http.MethodGet, gw.URL+"/mcp", nil)
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("a stream ended inside a line as EndStreams ran ended cleanly after %q", b)
	}
	if !strings.HasPrefix(string(b), "id: 1\n") {
		t.Errorf("read %q before the cut, want the relayed bytes", b)
	}
}
