package mcpguard_test

import (
	"bufio"
	"context"
	"encoding/json"
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
	r.auth.mu.Lock()
	r.auth.ids[ss] = id
	r.auth.mu.Unlock()
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
	r := newLCRig(t, "2025-11-25", pu)
	stuck := r.connectStuck(bob)
	user := r.connect(bob, true)
	base := runtime.NumGoroutine()

	r.setPolicy(pa)
	waitFor(t, func() bool { return user.heard.Load() >= 1 })
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
		waitFor(t, func() bool { return user.heard.Load() >= want })
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
	r := &lcRig{t: t, v: "2025-11-25", auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, w: newLCWatch()}
	r.srv = mcp.NewServer(&mcp.Implementation{Name: "lc", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	for _, name := range []string{"echo", "report", "ops"} {
		r.srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro}, ok)
	}
	var victim atomic.Pointer[mcp.ServerSession]
	r.srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/tools/list_changed" && req.GetSession() == victim.Load() {
				panic("a logging middleware's bug")
			}
			return next(ctx, method, req)
		}
	})
	g, err := mcpguard.New(pu, r.auth, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(r.srv); err != nil {
		t.Fatal(err)
	}
	r.g = g
	first := r.connect(bob, true)
	victim.Store(first.ss)
	second := r.connect(bob, true)
	r.setPolicy(pa)
	waitFor(t, func() bool { return second.heard.Load() >= 1 })
	r.setPolicy(pu)
	waitFor(t, func() bool { return second.heard.Load() >= 2 })
}
