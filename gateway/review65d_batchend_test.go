package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestReview65dEndStreamsBatchStalledReader: EndStreams ends the
// subscriptions/listen streams the gateway relays, a batch member's too
// (TestReview64iEndStreamsBatchListen), and the doc of EndStreams says an
// ended stream whose write to its client lasts a second from then (a client
// that stopped reading) ends then, "rather than when the write guard ends
// it (Options.Timeout)". A batch's merged event stream relaying a listen
// member to a client that stopped reading was not cut so: its handler,
// blocked in a write, went on until the batch's write guard ended it,
// Options.Timeout after the write began, and http.Server.Shutdown waited
// for it that long.
func TestReview65dEndStreamsBatchStalledReader(t *testing.T) {
	for _, pins := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "pins"}[pins]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r65dStalledBatch(t, pins)
		})
	}
}

func r65dStalledBatch(t *testing.T, pins bool) {
	var active atomic.Int64
	ds := newServer(t, r64iFlood())
	t.Cleanup(ds.CloseClientConnections)
	o := &Options{Timeout: 10 * time.Second, Logger: discardLogger()}
	if pins {
		o.Pins = TrustOnFirstUse()
	}
	g, err := New(ds.URL+"/mcp", DemoTokens(), o)
	if err != nil {
		t.Fatal(err)
	}
	gw := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer active.Add(-1)
		g.ServeHTTP(w, r)
	}))
	addr := strings.TrimPrefix(gw.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	body := "[" + r27Listen + "]"
	io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: "+viewer+
		"\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json"+
		"\r\nMcp-Protocol-Version: 2026-07-28\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	// The client reads the header and stops reading; the gateway's writes
	// fill its window and block.
	br := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("batch: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if active.Load() != 1 {
		t.Fatalf("%d handlers active, want the batch's", active.Load())
	}
	start := time.Now()
	g.EndStreams()
	for active.Load() != 0 {
		if time.Since(start) > 2500*time.Millisecond {
			t.Errorf("the batch's listen stream to a client that stopped reading still relayed 2.5 s after " +
				"EndStreams (Timeout 10 s)")
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn.Close()
}
