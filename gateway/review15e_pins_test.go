package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// refundTools are the tools examples/refund lists in HTTP mode.
var refundTools = []string{"admin_list_audit_log", "admin_reset_key", "get_customer_record", "trigger_refund"}

// pinsEvent is what these tests read of an audit record.
type pinsEvent struct {
	Subject, Tool, Phase, Code, Detail string
	Allowed                            bool
}

// runPrintPins runs the gateway binary with --print-pins against upstream
// and returns its stdout, its stderr and its exit error.
func runPrintPins(t *testing.T, bin string, env []string, upstream string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--print-pins", "--upstream", upstream, "--timeout", "5")
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// TestBinariesToolPins: the gateway binary's tool pinning in front of the
// refund server binary, both on loopback. --print-pins writes a file
// naming the refund server's tools; a gateway holding the downstream to
// that file (--tool-pins) lists and forwards as one without pins does,
// the policy unchanged; with one digest of the file altered, that tool is
// withheld and its calls refused (TOOL_CHANGED), the others work;
// --pin-tools works with --filter-tools-list; --print-pins against a
// downstream that is down fails clearly, writing nothing to stdout.
func TestBinariesToolPins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; skipped with -short")
	}
	if runtime.GOOS == "windows" {
		t.Skip("stops the binaries with SIGINT")
	}
	dir := buildRefundAndGateway(t)
	gwBin := filepath.Join(dir, "gateway")
	env := withoutEnv(withoutEnv(os.Environ(), TokensEnv), "REFUND_MCP_TOKENS") // the demo tokens
	refundPort := freePort(t)
	down := "http://127.0.0.1:" + refundPort
	stackProc(t, filepath.Join(dir, "refund"), env, "-http", "127.0.0.1:"+refundPort, "-audit", filepath.Join(dir, "refund.jsonl"))
	waitHealthy(t, down+"/healthz")

	// 1. --print-pins.
	stdout, stderr, err := runPrintPins(t, gwBin, env, down+"/mcp")
	if err != nil {
		t.Fatalf("--print-pins: %v\nstderr:\n%s", err, stderr)
	}
	var pins map[string]string
	if err := json.Unmarshal([]byte(stdout), &pins); err != nil {
		t.Fatalf("--print-pins wrote %q: %v", stdout, err)
	}
	// The refund server gives no instructions (mcp.ServerOptions has
	// none): the go-sdk server leaves the member out, and there is no
	// #instructions pin; a null or a string would have one.
	if got := slices.Sorted(maps.Keys(pins)); !slices.Equal(got, refundTools) {
		t.Fatalf("--print-pins names %v, want the refund server's tools %v:\n%s", got, refundTools, stdout)
	}
	for name, d := range pins {
		if len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
			t.Errorf("--print-pins: %s has digest %q, want 64 lower-case hex digits", name, d)
		}
	}
	pinsFile := filepath.Join(dir, "pins.json")
	if err := os.WriteFile(pinsFile, []byte(stdout), 0o600); err != nil {
		t.Fatal(err)
	}

	// startGW starts a gateway in front of the refund server with args,
	// auditing to a file of its own, and returns its URL, the audit
	// file's path, and its stop.
	startGW := func(t *testing.T, name string, args ...string) (string, string, func(), func() string) {
		t.Helper()
		port := freePort(t)
		auditFile := filepath.Join(dir, name+".jsonl")
		stop, logs := stackProc(t, gwBin, env, append([]string{"--host", "127.0.0.1", "--port", port,
			"--upstream", down + "/mcp", "--timeout", "10", "--audit", auditFile}, args...)...)
		url := "http://127.0.0.1:" + port
		waitHealthy(t, url+"/healthz")
		return url, auditFile, stop, logs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	names := func(t *testing.T, cs *mcp.ClientSession) []string {
		t.Helper()
		var n []string
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			n = append(n, tl.Name)
		}
		slices.Sort(n)
		return n
	}
	lookup := &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"customer_id": "CUST-00001"}}
	reset := &mcp.CallToolParams{Name: "admin_reset_key", Arguments: map[string]any{"key_id": "KEY-PRIMARY"}}
	refused := func(t *testing.T, what string, err error, detail string) {
		t.Helper()
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != CodeForbidden || !strings.Contains(je.Message, detail) {
			t.Errorf("%s: %v, want JSON-RPC %d (%s)", what, err, CodeForbidden, detail)
		}
	}
	works := func(t *testing.T, what string, res *mcp.CallToolResult, err error) {
		t.Helper()
		if err != nil || res.IsError {
			t.Errorf("%s: %v %+v", what, err, res)
		}
	}
	noPinRecords := func(t *testing.T, events []pinsEvent) {
		t.Helper()
		for _, e := range events {
			if strings.HasPrefix(e.Code, "TOOL_") {
				t.Errorf("audit record %+v with the tools as pinned", e)
			}
		}
	}
	// outcomes returns "subject tool code" of the outcome records.
	outcomes := func(events []pinsEvent) []string {
		var o []string
		for _, e := range events {
			if e.Phase == "outcome" {
				o = append(o, e.Subject+" "+e.Tool+" "+e.Code)
			}
		}
		slices.Sort(o)
		return o
	}
	received := func(t *testing.T) []string {
		t.Helper()
		resp, err := http.Get(down + "/_received")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var recv []struct{ Method, Tool, Subject string }
		if err := json.NewDecoder(resp.Body).Decode(&recv); err != nil {
			t.Fatal(err)
		}
		var calls []string
		for _, r := range recv {
			if r.Method == "tools/call" {
				calls = append(calls, r.Subject+" "+r.Tool)
			}
		}
		slices.Sort(calls)
		return calls
	}
	clearReceived := func(t *testing.T) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodDelete, down+"/_received", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	// 2. --tool-pins with the file as printed.
	t.Run("tool_pins", func(t *testing.T) {
		clearReceived(t)
		url, auditFile, stop, logs := startGW(t, "pinned", "--tool-pins", pinsFile)
		a := connect(t, ctx, url+"/mcp", "admin-token")
		v := connect(t, ctx, url+"/mcp", "viewer-token")
		if got := names(t, a); !slices.Equal(got, refundTools) {
			t.Errorf("admin lists %v, want %v", got, refundTools)
		}
		if got := names(t, v); !slices.Equal(got, refundTools) { // no --filter-tools-list
			t.Errorf("viewer lists %v, want %v", got, refundTools)
		}
		res, err := a.CallTool(ctx, lookup)
		works(t, "admin get_customer_record", res, err)
		_, err = v.CallTool(ctx, reset)
		refused(t, "viewer admin_reset_key", err, "requires role admin")
		res, err = a.CallTool(ctx, reset)
		works(t, "admin admin_reset_key", res, err)
		stop()
		if want := []string{"admin admin_reset_key", "admin get_customer_record"}; !slices.Equal(received(t), want) {
			t.Errorf("refund server received calls %v, want %v", received(t), want)
		}
		events := jsonLines[pinsEvent](t, auditFile)
		noPinRecords(t, events)
		want := []string{"admin admin_reset_key ", "admin get_customer_record ", "viewer admin_reset_key FORBIDDEN"}
		if got := outcomes(events); !slices.Equal(got, want) {
			t.Errorf("audit outcomes %q, want %q", got, want)
		}
		if strings.Contains(logs(), "withheld") {
			t.Errorf("gateway logged a withheld tool:\n%s", logs())
		}
	})

	// 3. One digest altered.
	t.Run("altered_digest", func(t *testing.T) {
		clearReceived(t)
		altered := maps.Clone(pins)
		d := []byte(altered["get_customer_record"])
		if d[0] == '0' { // another hex digit
			d[0] = '1'
		} else {
			d[0] = '0'
		}
		altered["get_customer_record"] = string(d)
		b, _ := json.Marshal(altered)
		file := filepath.Join(dir, "altered.json")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		url, auditFile, stop, logs := startGW(t, "altered", "--tool-pins", file)
		a := connect(t, ctx, url+"/mcp", "admin-token")
		v := connect(t, ctx, url+"/mcp", "viewer-token")
		others := []string{"admin_list_audit_log", "admin_reset_key", "trigger_refund"}
		if got := names(t, a); !slices.Equal(got, others) {
			t.Errorf("admin lists %v, want %v (get_customer_record withheld)", got, others)
		}
		_, err := a.CallTool(ctx, lookup)
		refused(t, "admin get_customer_record", err, "definition changed")
		_, err = v.CallTool(ctx, lookup)
		refused(t, "viewer get_customer_record", err, "definition changed")
		res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "admin_list_audit_log", Arguments: map[string]any{}})
		works(t, "admin admin_list_audit_log", res, err)
		res, err = v.CallTool(ctx, &mcp.CallToolParams{Name: "trigger_refund",
			Arguments: map[string]any{"customer_id": "CUST-00002", "amount": 5, "reason": "pinned e2e"}})
		works(t, "viewer trigger_refund", res, err)
		_, err = v.CallTool(ctx, reset)
		refused(t, "viewer admin_reset_key", err, "requires role admin")
		stop()
		if want := []string{"admin admin_list_audit_log", "viewer trigger_refund"}; !slices.Equal(received(t), want) {
			t.Errorf("refund server received calls %v, want %v", received(t), want)
		}
		want := []string{"admin admin_list_audit_log ", "admin get_customer_record TOOL_CHANGED",
			"viewer admin_reset_key FORBIDDEN", "viewer get_customer_record TOOL_CHANGED", "viewer trigger_refund "}
		var got []string
		listed := 0
		for _, e := range jsonLines[pinsEvent](t, auditFile) {
			switch {
			case e.Phase != "outcome":
			case e.Code == "TOOL_CHANGED" && strings.HasPrefix(e.Detail, "listed definition sha256 "):
				listed++
				if e.Tool != "get_customer_record" {
					t.Errorf("listing record %+v", e)
				}
			default:
				if strings.HasPrefix(e.Code, "TOOL_") && e.Tool != "get_customer_record" {
					t.Errorf("record %+v", e)
				}
				got = append(got, e.Subject+" "+e.Tool+" "+e.Code)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("audit outcomes %q, want %q", got, want)
		}
		if listed != 1 {
			t.Errorf("%d records of the changed listing, want 1", listed)
		}
		if !strings.Contains(logs(), "tool withheld") {
			t.Errorf("no log of the withheld tool:\n%s", logs())
		}
	})

	// --pin-tools and --filter-tools-list at once.
	t.Run("pin_tools_filtered", func(t *testing.T) {
		clearReceived(t)
		url, auditFile, stop, _ := startGW(t, "tofu", "--pin-tools", "--filter-tools-list")
		v := connect(t, ctx, url+"/mcp", "viewer-token")
		a := connect(t, ctx, url+"/mcp", "admin-token")
		viewerTools := []string{"get_customer_record", "trigger_refund"}
		if got := names(t, v); !slices.Equal(got, viewerTools) { // first listing: the viewer's
			t.Errorf("viewer lists %v, want %v", got, viewerTools)
		}
		if got := names(t, a); !slices.Equal(got, refundTools) {
			t.Errorf("admin lists %v, want %v", got, refundTools)
		}
		if got := names(t, v); !slices.Equal(got, viewerTools) {
			t.Errorf("viewer lists %v again, want %v", got, viewerTools)
		}
		res, err := v.CallTool(ctx, lookup)
		works(t, "viewer get_customer_record", res, err)
		_, err = v.CallTool(ctx, reset)
		refused(t, "viewer admin_reset_key", err, "requires role admin")
		res, err = a.CallTool(ctx, reset)
		works(t, "admin admin_reset_key", res, err)
		stop()
		if want := []string{"admin admin_reset_key", "viewer get_customer_record"}; !slices.Equal(received(t), want) {
			t.Errorf("refund server received calls %v, want %v", received(t), want)
		}
		events := jsonLines[pinsEvent](t, auditFile)
		noPinRecords(t, events)
		want := []string{"admin admin_reset_key ", "viewer admin_reset_key FORBIDDEN", "viewer get_customer_record "}
		if got := outcomes(events); !slices.Equal(got, want) {
			t.Errorf("audit outcomes %q, want %q", got, want)
		}
	})

	// --print-pins against a downstream that is down.
	t.Run("print_pins_down", func(t *testing.T) {
		gone := "http://127.0.0.1:" + freePort(t) + "/mcp"
		start := time.Now()
		stdout, stderr, err := runPrintPins(t, gwBin, env, gone)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("--print-pins with the downstream down: %v, want a non-zero exit; stderr:\n%s", err, stderr)
		}
		if stdout != "" {
			t.Errorf("--print-pins with the downstream down wrote to stdout: %q", stdout)
		}
		if !strings.Contains(stderr, "--print-pins") || !strings.Contains(stderr, gone) {
			t.Errorf("--print-pins with the downstream down: stderr names neither the flag nor the upstream:\n%s", stderr)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("--print-pins with the downstream down took %v", d)
		}
	})
}
