package stdio

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview20BatchAfterInitializeFailedLate: the go-sdk fixes the
// protocol version when its initialize handler runs, whatever the answer
// turns out to be. A receiving middleware that calls the SDK's handler and
// then fails (an audit write after the call, say) has the client answered
// with an error while the session runs at the version negotiated, here
// 2025-11-25, where the SDK ends the session on any batch. The transport
// took an initialize answered with an error for one that left no version
// and passed the batch: the session ended, and the ping after it was
// never answered. An initialize answered with an error now leaves the
// version unknown: batches are refused (-32600) until an initialize
// succeeds.
func TestReview20BatchAfterInitializeFailedLate(t *testing.T) {
	failLate := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "initialize" && err == nil {
				return nil, errors.New("audit: cannot record the session's start")
			}
			return res, err
		}
	}
	out := &lockedBuffer{}
	in, done := rawServer(t, out, nil, failLate)
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	waitLines(t, out, 1)
	go func() {
		io.WriteString(in, `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`+"\n"+`{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n")
		in.Close()
	}()
	if err := <-done; err != nil {
		t.Errorf("Run: %v, want nil at end of input (a line the transport passed ended the session)", err)
	}
	if !strings.Contains(out.String(), `"id":1,"error"`) {
		t.Errorf("initialize was not answered with the middleware's error:\n%s", out)
	}
	got := answers(t, out.String())
	for i := range got {
		if got[i].ID == "1" {
			got[i].Code = -1 // an error of the middleware's: any code
		}
	}
	want := []answer{{"1", -1}, {"null", codeInvalidRequest}, {"3", 0}}
	if diff := cmp.Diff(want, got, anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
	}
	if !strings.Contains(out.String(), "protocol version is not known") {
		t.Errorf("the batch was not refused for the unknown version:\n%s", out)
	}
}
