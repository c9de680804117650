package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62eStdioCancelStopsReadNotWrite pins, on the built binary over
// stdio, what the README says of cancellation ("Over stdio cancellation
// reaches the server on either version, and writes still run to the end"),
// as the seed asks (a read ends when its client gives up; "a started change
// runs to its deadline and is not replayed"). Only the HTTP transport had
// a test (TestReview14HTTPCancelStopsReadNotWrite).
func TestReview62eStdioCancelStopsReadNotWrite(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		name := "default_protocol"
		if version != "" {
			name = "protocol_" + strings.ReplaceAll(version, "-", "_")
		}
		t.Run(name, func(t *testing.T) {
			gw, url := startGateway(t)
			cs, stderr := connectStdio(t, url, version, nil, sessionEnv+"="+sessionCustomer2)
			for _, tc := range []struct {
				tool, method, path string
				args               map[string]any
				wantCancelled      bool
			}{
				{"get_cart", "GET", "/api/cart", map[string]any{}, true},
				{"update_cart", "POST", "/api/cart", map[string]any{"sku": "RB-500", "quantity": 3}, false},
			} {
				h := gw.hold(tc.method, tc.path)
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
					errc <- err
				}()
				recv(t, h.arrived, tc.tool+"'s gateway request")
				cancel()
				if err := recv(t, errc, "the client call"); !errors.Is(err, context.Canceled) {
					t.Fatalf("%s: client call: %v, want context.Canceled", tc.tool, err)
				}
				if !tc.wantCancelled {
					close(h.release)
				}
				// Well under the call's 10 s deadline: a read that stops
				// is told apart from one ended by its deadline.
				select {
				case cancelled := <-h.done:
					if cancelled != tc.wantCancelled {
						t.Errorf("%s abandoned over stdio: gateway request cancelled = %v, want %v",
							tc.tool, cancelled, tc.wantCancelled)
					}
				case <-time.After(4 * time.Second):
					close(h.release)
					t.Errorf("%s abandoned over stdio: its gateway request still runs 4 s later", tc.tool)
					<-h.done
				}
				gw.unhold(tc.method, tc.path)
			}
			deadline := time.Now().Add(4 * time.Second)
			for gw.quantity("u-1002", "RB-500") != 3 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if q := gw.quantity("u-1002", "RB-500"); q != 3 {
				t.Errorf("the write the client abandoned did not complete: quantity %d, want 3\n%s", q, stderr)
			}
		})
	}
}
