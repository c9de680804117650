package stdio

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oddResult is a result of a server's own (the go-sdk lets one embed
// ResultBase in a custom result) with a member whose name the transport
// once decoded, case-insensitively, as a string.
type oddResult struct {
	mcp.ResultBase
	Content []any `json:"content"`
	Version int   `json:"ProtocolVersion"`
}

// TestReview20AnswerOfAnyShapeCounted: the transport took the go-sdk's
// answers out of flight by decoding each output line into a struct that
// read the result's "protocolVersion" as a string (encoding/json matches
// member names in any case). A result with such a member of another type
// failed the whole decode: its request stayed in flight for good (a place
// of the 4096 and its bytes taken, and every drain waiting to its
// timeout). The result is now read only for the answer to initialize.
func TestReview20AnswerOfAnyShapeCounted(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	s := newSession()
	out := &lockedBuffer{}
	w := newWriter(out, s)
	tr := &mcp.IOTransport{Reader: newReader(pr, w, s, slog.New(slog.DiscardHandler), 2*time.Second), Writer: w}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				return &oddResult{Content: []any{}, Version: 7}, nil
			}
			return next(ctx, method, req)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- server.Run(ctx, tr) }()
	io.WriteString(pw, initLine+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n")
	waitLines(t, out, 1)
	io.WriteString(pw, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{}}}`+"\n")
	waitLines(t, out, 2)
	if n, _ := s.unanswered(); n != 0 {
		t.Errorf("%d requests in flight after the answer to the call was written, want 0; output:\n%s", n, out)
	}
	pw.Close()
	if err := <-ran; err != nil {
		t.Errorf("Run: %v", err)
	}
}
