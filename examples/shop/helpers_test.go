package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bin is the shop binary, built once by TestMain for the stdio tests.
var bin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "shop-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "shop")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the shop binary: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// newStack starts a synthetic gateway and a shop server over HTTP on
// 127.0.0.1, configured by cfg (defaults when nil), and stops both when
// the test ends.
func newStack(t *testing.T, mod func(*config), edit func(*shop)) *stack {
	t.Helper()
	cfg := defaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	st, err := startStack(cfg, httpOptions{}, io.Discard, nil, edit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.stop)
	return st
}

// connect connects a go-sdk client over HTTP as session.
func connect(t *testing.T, st *stack, session string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := connectHTTP(ctx, st.mcpURL, session, opts, nil)
	if err != nil {
		t.Fatalf("connect as %s: %v", session, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// noMRTR is a client that returns input requests instead of answering them
// (the test answers them): it declares elicitation, which the guard asks
// only of a client that does.
func noMRTR() *mcp.ClientOptions {
	return &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}}
}

// callRaw calls tool and returns the result or the JSON-RPC error.
func callRaw(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, *jsonrpc.Error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			t.Fatalf("CallTool(%s): %v is not a JSON-RPC error", p.Name, err)
		}
		return nil, we
	}
	return res, nil
}

// call calls tool with args and returns its result, failing on a
// protocol error.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, we := callRaw(t, cs, &mcp.CallToolParams{Name: tool, Arguments: args})
	if we != nil {
		t.Fatalf("CallTool(%s, %v): protocol error %v", tool, args, we)
	}
	return res
}

// ok calls tool and returns its structured result, failing on an error.
func ok(t *testing.T, cs *mcp.ClientSession, tool string, args any) map[string]any {
	t.Helper()
	res := call(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("CallTool(%s, %v): error result %s", tool, args, mustJSON(t, res.StructuredContent))
	}
	return toMap(t, res.StructuredContent)
}

// toolErr calls tool and returns the "error" object of its error result.
func toolErr(t *testing.T, cs *mcp.ClientSession, tool string, args any) map[string]any {
	t.Helper()
	res := call(t, cs, tool, args)
	if !res.IsError {
		t.Fatalf("CallTool(%s, %v): want an error result, got %s", tool, args, mustJSON(t, res.StructuredContent))
	}
	e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("CallTool(%s): error result without an error object: %s", tool, mustJSON(t, res.StructuredContent))
	}
	var text map[string]any
	if len(res.Content) != 1 || json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &text) != nil {
		t.Errorf("CallTool(%s): want the error as one JSON text content too, got %+v", tool, res.Content)
	}
	return e
}

func toMap(t *testing.T, v any) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// toolNames lists the tools session sees.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// specNames lists the tools of specs matching keep, sorted.
func specNames(adminWrites bool, keep func(*toolSpec) bool) []string {
	var names []string
	for _, s := range toolSpecs(adminWrites) {
		if keep(s) {
			names = append(names, s.name)
		}
	}
	slices.Sort(names)
	return names
}

// recv waits for a value on c, failing after a generous bound (a hang,
// not a timing assertion).
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// headerAdder sets extra headers on every request, as a client might.
type headerAdder struct{ h map[string]string }

func (a headerAdder) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range a.h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func httpClient(rt http.RoundTripper) *http.Client { return &http.Client{Transport: rt} }

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// connectInMemory connects a go-sdk client to s over the in-memory
// transport, as a stdio client would (no HTTP headers).
func connectInMemory(t *testing.T, s *shop, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, srvT := mcp.NewInMemoryTransports()
	ss, err := s.server.Connect(ctx, srvT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
