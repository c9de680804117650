package mcpguard_test

import (
	"bufio"
	"context"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lcRawSession is a session on protocol 2025-11-25 over the go-sdk's
// IOTransport on a synchronous pipe, whose client lists the tools and then
// stops reading: the server's next write to it blocks (a client that hung,
// or a full socket buffer).
type lcRawSession struct {
	ss   *mcp.ServerSession
	conn net.Conn
}

func (r *lcRig) connectStuck(id *mcpguard.Identity) *lcRawSession {
	t := r.t
	t.Helper()
	sc, cc := net.Pipe()
	ss, err := r.srv.Connect(context.Background(), &mcp.IOTransport{Reader: sc, Writer: sc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.bind(ss, id)
	s := &lcRawSession{ss: ss, conn: cc}
	t.Cleanup(func() { cc.Close(); ss.Close() })
	rd := bufio.NewReader(cc)
	send := func(line string) {
		t.Helper()
		cc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := cc.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	await := func(id string) {
		t.Helper()
		cc.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(line, `"id":`+id+`,`) || strings.Contains(line, `"id":`+id+`}`) {
				return
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	await("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	await("2")
	return s // and read no more
}

// TestReview31bStuckSessionStallsNoOther: a session whose client stopped
// reading (its transport blocks the write of a notification, whatever the
// context says) is not told, and keeps no other session from being told:
// neither the one after it in the server's order, nor, at the next
// SetPolicy, any session at all; its stuck notices do not pile up a
// goroutine per SetPolicy; tools/list is served meanwhile; once the
// session is closed, nothing of the guard's is left running.
func TestReview31bStuckSessionStallsNoOther(t *testing.T) {
	pu, pa := lcPolicy(t, "user"), lcPolicy(t, "admin")
	r := newLCRig(t, "2025-11-25", pu, lcSpecTools)
	stuck := r.connectStuck(bob)
	user := r.connect(bob, lcListTools)
	base := runtime.NumGoroutine()

	r.setPolicy(pa)
	waitFor(t, func() bool { return user.toolsHeard.Load() >= 1 })
	if got := user.names(t); len(got) != 1 || got[0] != "echo" {
		t.Fatalf("bob lists %v under pa", got)
	}
	for i := range 20 { // each a change for bob
		if i%2 == 0 {
			r.setPolicy(pu)
		} else {
			r.setPolicy(pa)
		}
		want := int64(i + 2)
		waitFor(t, func() bool { return user.toolsHeard.Load() >= want })
		user.names(t)
	}
	if n := runtime.NumGoroutine(); n > base+5 {
		t.Errorf("%d goroutines after 21 policies told while one session is stuck, %d before", n, base)
	}
	stuck.conn.Close()
	stuck.ss.Close()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= base })
}

// TestReview31bPanickingSendTellsTheRest: a sending middleware below the
// guard that panics on one session's notification keeps no later session
// from being told, at this SetPolicy or the next.
func TestReview31bPanickingSendTellsTheRest(t *testing.T) {
	pu, pa := lcPolicy(t, "user"), lcPolicy(t, "admin")
	var victim atomic.Pointer[mcp.ServerSession]
	spec := lcSpecTools
	spec.setup = lcPanicOn("notifications/tools/list_changed", &victim)
	r := newLCRig(t, "2025-11-25", pu, spec)
	first := r.connect(bob, lcListTools)
	victim.Store(first.ss)
	second := r.connect(bob, lcListTools)
	r.setPolicy(pa)
	waitFor(t, func() bool { return second.toolsHeard.Load() >= 1 })
	r.setPolicy(pu)
	waitFor(t, func() bool { return second.toolsHeard.Load() >= 2 })
}
