package stdio

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review27Deep returns a JSON value nested depth levels deep.
func review27Deep(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// TestReview27TooDeepRequestAnsweredWithItsID: a request nested deeper than
// the go-sdk's 1000 levels is refused with -32600, and, as for any other
// refused request whose id can be read (and is not in flight), the answer
// carries that id. It was answered with a null id: the client's call never
// got its answer, and a go-sdk client, which takes a response without an
// id for a broken connection, ended its whole session.
func TestReview27TooDeepRequestAnsweredWithItsID(t *testing.T) {
	for _, tc := range []struct {
		name, line, id string
	}{
		{"params", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + review27Deep(1000) + `}`, "7"},
		{"string_id", `{"jsonrpc":"2.0","id":"a\u0062","method":"x","params":` + review27Deep(1000) + `}`, `"ab"`},
		{"unknown_member", `{"x":` + review27Deep(1000) + `,"jsonrpc":"2.0","method":"x","id":-3}`, "-3"},
		// No id to answer with: null, as before.
		{"notification", `{"jsonrpc":"2.0","method":"x","params":` + review27Deep(1000) + `}`, ""},
		{"response", `{"jsonrpc":"2.0","id":7,"result":` + review27Deep(1000) + `}`, ""},
		{"batch", `[{"jsonrpc":"2.0","id":7,"method":"x","params":` + review27Deep(999) + `}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, lerr := check([]byte(tc.line))
			if lerr == nil || lerr.code != codeInvalidRequest {
				t.Fatalf("check: %+v, want -32600", lerr)
			}
			if string(lerr.id) != tc.id {
				t.Errorf("answered with id %q, want %q (%s)", lerr.id, tc.id, lerr.reason)
			}
		})
	}
}

// TestReview27TooDeepCallKeepsGoSDKClient: a go-sdk client that calls a tool
// with arguments nested deeper than 1000 levels gets an error for that call,
// and its session goes on. The transport's answer with a null id made the
// client's connection fail: every call after it failed too.
func TestReview27TooDeepCallKeepsGoSDKClient(t *testing.T) {
	toServerR, toServerW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	s := newSession()
	w := newWriter(toClientW, s)
	r := newReader(toServerR, w, s, slog.New(slog.DiscardHandler), time.Second)
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	ss, err := server.Connect(ctx, &mcp.IOTransport{Reader: r, Writer: w}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: toClientR, Writer: toServerW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	deep := map[string]any{"a": json.RawMessage(review27Deep(1000))}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: deep}); err == nil {
		t.Fatal("a call nested deeper than 1000 levels succeeded; want an error")
	} else if !strings.Contains(err.Error(), "1000 levels") {
		t.Errorf("deep call: %v, want the transport's -32600 for its nesting", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("the call after the deep one: %v, %+v; want it answered (the client's session must survive)", err, res)
	}
}

// TestReview27TooDeepIDInFlightNull: the id of a too-deep request is left
// out of its answer while a request with that id is in flight (the client
// would take the answer for that request's), as for any other refusal.
func TestReview27TooDeepIDInFlightNull(t *testing.T) {
	deep := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"x","params":` + review27Deep(1000) + `}`
	}
	in := strings.Join([]string{
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
		deep("2"), // id 2 is in flight: the slow tool runs 100ms
		deep("3"),
	}, "\n") + "\n"
	out, _, err := serveLines(t, io.NopCloser(strings.NewReader(in)))
	if err != nil {
		t.Errorf("Run: %v, want nil at end of input", err)
	}
	want := []answer{{"1", 0}, {"null", codeInvalidRequest}, {"3", codeInvalidRequest}, {"2", 0}}
	if diff := cmp.Diff(want, answers(t, out.String()), anyOrder); diff != "" {
		t.Errorf("answers (-want +got):\n%s\noutput:\n%s", diff, out)
	}
}
