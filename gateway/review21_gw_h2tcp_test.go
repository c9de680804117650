//go:build unix

package gateway

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// h2Stall sends a POST of body over HTTP/2 without TLS (prior knowledge)
// to addr, on a connection whose receive buffer is 4 KiB, granting the
// server windows as large as HTTP/2 allows, and then reads nothing more:
// the client stalls the connection itself, not one stream.
func h2Stall(t *testing.T, addr, auth, body string) {
	t.Helper()
	c := dialSmall(t, addr, 4096)
	frame := func(typ, flags byte, stream uint32, p []byte) []byte {
		f := []byte{byte(len(p) >> 16), byte(len(p) >> 8), byte(len(p)), typ, flags, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(f[5:], stream)
		return append(f, p...)
	}
	var hb []byte
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", addr}, {":path", "/mcp"},
		{"authorization", auth}, {"content-type", "application/json"}, {"accept", "application/json, text/event-stream"},
		{"content-length", strconv.Itoa(len(body))}} {
		hb = append(hb, 0, byte(len(kv[0])))
		hb = append(hb, kv[0]...)
		hb = append(hb, byte(len(kv[1])))
		hb = append(hb, kv[1]...)
	}
	out := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	out = append(out, frame(4, 0, 0, []byte{0, 4, 0x7f, 0xff, 0xff, 0xff})...) // SETTINGS_INITIAL_WINDOW_SIZE
	out = append(out, frame(8, 0, 0, binary.BigEndian.AppendUint32(nil, 0x7fffffff-65535))...)
	out = append(out, frame(1, 0x4, 1, hb)...) // HEADERS, END_HEADERS
	for len(body) > 0 {
		k := min(len(body), 16384)
		flags := byte(0)
		if k == len(body) {
			flags = 1 // END_STREAM
		}
		out = append(out, frame(0, flags, 1, []byte(body[:k]))...)
		body = body[k:]
	}
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
}

// TestReview21H2StalledConnectionWriteByteTimeout checks what the package
// doc advises for HTTP/2: a client that stops reading its whole connection
// (not one stream) blocks the server's frame writer, so the stream reset
// the write guard asks for is never sent and the handler waits (it did
// here, without the option); the server's HTTP2.WriteByteTimeout closes
// such a connection, and the handler returns.
func TestReview21H2StalledConnectionWriteByteTimeout(t *testing.T) {
	size := 2 << 20
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"pad":"`+strings.Repeat("a", size)+`"}}`)
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Timeout: 300 * time.Millisecond, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 1)
	ln, err := (&net.ListenConfig{Control: smallBuffers}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		g.ServeHTTP(w, r)
	}))
	gw.Listener = ln
	gw.Config.Protocols = new(http.Protocols)
	gw.Config.Protocols.SetUnencryptedHTTP2(true)
	gw.Config.HTTP2 = &http.HTTP2Config{WriteByteTimeout: 300 * time.Millisecond}
	gw.Start()
	t.Cleanup(gw.Close)
	h2Stall(t, ln.Addr().String(), admin, call(`1`, "echo", ""))
	select {
	case <-done:
	case <-time.After(8 * time.Second): // a busy machine under -race
		t.Fatal("HTTP/2 with WriteByteTimeout: the handler still runs 8 s after the client stopped reading its connection")
	}
}
