package main

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestReview20cReadTimeoutDoesNotCutCalls: the read timeout bounds the
// reading of a request, not the call it carries. The shop's HTTP server
// (its handler and newHTTPServer, with the read timeouts cut to 300 ms
// so that the test is short) answers a read and a write that wait on the
// gateway for well past them, over a real client, and neither gateway
// request sees its context cancelled. (By hand, with the real timeouts: a
// confirmation answered 110 s after it was asked, a request whose body
// took 25 s to arrive, and a connection reused after 100 s idle were all
// answered.)
func TestReview20cReadTimeoutDoesNotCutCalls(t *testing.T) {
	st := newStack(t, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(mcpHandler(st.shop.server, httpOptions{}, nil))
	srv.ReadHeaderTimeout, srv.ReadTimeout = 300*time.Millisecond, 300*time.Millisecond
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	url := "http://" + ln.Addr().String() + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	cs, err := connectHTTP(ctx, url, sessionCustomer, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tc := range []struct {
		tool, method, path string
		args               map[string]any
	}{
		{"get_product", "GET", "/api/products/RB-100", map[string]any{"sku": "RB-100"}},
		{"update_cart", "POST", "/api/cart", map[string]any{"sku": "RB-100", "quantity": 1}},
	} {
		h := st.gw.hold(tc.method, tc.path)
		go func() {
			select {
			case <-h.arrived:
				time.Sleep(1200 * time.Millisecond) // four read timeouts
				close(h.release)
			case <-ctx.Done():
			}
		}()
		res := ok(t, cs, tc.tool, tc.args)
		st.gw.unhold(tc.method, tc.path)
		if cancelled := recv(t, h.done, tc.tool+"'s gateway request"); cancelled {
			t.Errorf("%s: the gateway request's context was cancelled while held past the read timeout", tc.tool)
		}
		if res == nil {
			t.Errorf("%s: no answer", tc.tool)
		}
	}
}
