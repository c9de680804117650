package stdio_test

import (
	"context"
	"testing"

	"github.com/mcpguard/mcpguard/stdio"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64gServeNil: Serve with a nil server, a nil transport, or the
// nil *mcp.IOTransport of an Isolate whose error was not looked at
// panicked (in the go-sdk, or reading the transport's Reader). It must
// return an error that names the missing argument.
func TestReview64gServeNil(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	for _, tc := range []struct {
		name string
		s    *mcp.Server
		t    mcp.Transport
	}{
		{"nil server", nil, &mcp.InMemoryTransport{}},
		{"nil transport", server, nil},
		{"nil *mcp.IOTransport", server, (*mcp.IOTransport)(nil)},
	} {
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("%s: Serve panicked: %v", tc.name, v)
				}
			}()
			if err := stdio.Serve(context.Background(), tc.s, tc.t, 0, nil); err == nil {
				t.Errorf("%s: Serve returned nil", tc.name)
			}
		}()
	}
}
