package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stackProc starts bin with env, its stderr into a buffer; stop interrupts
// it (SIGINT: the binaries shut down and close their audit sinks) and waits.
func stackProc(t *testing.T, bin string, env []string, args ...string) (stop func(), stderr func() string) {
	t.Helper()
	var mu sync.Mutex
	var buf bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stderr = lockedWriter{&mu, &buf}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	return stop, func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
}

// rawPost sends a hand-written HTTP/1.1 POST of body to addr with the
// header lines hdr (each ending in CRLF), and returns the status code.
func rawPost(t *testing.T, addr, hdr, body string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Protocol-Version: 2025-11-25\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s", addr, hdr, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// jsonLines decodes the JSON lines of the file at path.
func jsonLines[T any](t *testing.T, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for l := range bytes.Lines(b) {
		var v T
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatalf("%s: line %q: %v", path, l, err)
		}
		out = append(out, v)
	}
	return out
}

// TestStackAttacks deploys the stack as the READMEs say (examples/refund
// in HTTP mode, examples/gateway with --upstream to it, both on loopback)
// and attacks it from outside as agents holding low-privilege tokens
// would: forged identity headers, Authorization tricks, tool names spelled
// to slip past the admin_* rule, batch and notification forms, another
// principal's session, a raced spend cap, a per-user rate spread over many
// sessions and a batch. Then both processes are stopped and their audit
// trails read back: every tools/call sent has exactly one outcome record
// at the gateway (correlation id, subject, tool, code), every one the
// refund server received has exactly one there, tied to the gateway's by
// its request id, and no token or argument value is in any log line or
// in the gateway's audit.
func TestStackAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; skipped with -short")
	}
	if runtime.GOOS == "windows" {
		t.Skip("stops the binaries with SIGINT")
	}
	dir := buildRefundAndGateway(t)
	const tokens = `{"viewer-token":{"sub":"viewer","role":"viewer"},"admin-token":{"sub":"admin","role":"admin"},` +
		`"race-token":{"sub":"racer","role":"viewer"},"rate-token":{"sub":"rater","role":"viewer"}}`
	env := append(withoutEnv(withoutEnv(os.Environ(), TokensEnv), "REFUND_MCP_TOKENS"), TokensEnv+"="+tokens)
	refundPort, gwPort := freePort(t), freePort(t)
	down := "http://127.0.0.1:" + refundPort
	refundAudit, gwAudit := filepath.Join(dir, "refund.jsonl"), filepath.Join(dir, "gateway.jsonl")
	stopRefund, refundLog := stackProc(t, filepath.Join(dir, "refund"), env,
		"-http", "127.0.0.1:"+refundPort, "-audit", refundAudit, "-user-cap", "500", "-session-cap", "500")
	waitHealthy(t, down+"/healthz")
	gwAddr := "127.0.0.1:" + gwPort
	stopGW, gwLog := stackProc(t, filepath.Join(dir, "gateway"), env, "--host", "127.0.0.1", "--port", gwPort,
		"--upstream", down+"/mcp", "--timeout", "10", "--audit", gwAudit, "--rate", "20/1h", "--inflight", "16")
	waitHealthy(t, "http://"+gwAddr+"/healthz")
	rg := &rig{url: "http://" + gwAddr}

	// sent is every tools/call sent, as the gateway's outcome record must
	// show it: subject, tool, code ("" when forwarded).
	type outcome struct{ Subject, Tool, Code string }
	var sent []outcome
	expect := func(sub, tool, code string, n int) {
		for range n {
			sent = append(sent, outcome{sub, tool, code})
		}
	}
	post := func(auth, body string, status int, hdr ...string) reply {
		t.Helper()
		got := rg.post(t, auth, body, append([]string{"Mcp-Protocol-Version", "2025-11-25"}, hdr...)...)
		if got.status != status {
			t.Errorf("POST %s %s: %d %s; want %d", auth, body, got.status, got.body, status)
		}
		return got
	}
	lookup := call(`1`, "get_customer_record", `{"customer_id":"CUST-00001"}`)
	adminCall := func(id, name string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{"key_id":"KEY-PRIMARY"}}}`
	}

	// Identity spoofing: the gateway's headers in every spelling, listed
	// in Connection too; the downstream must see the gateway's own.
	spoof := []string{"X-MCP-Gateway-Role", "admin", "x-mcp-gateway-subject", "admin", "X_Mcp_Gateway_Role", "admin",
		"X-Mcp-Gateway-Request-Id", "forged", "Connection", "X-Mcp-Gateway-Subject"}
	post(viewer, lookup, http.StatusOK, spoof...)
	expect("viewer", "get_customer_record", "", 1)
	post(viewer, call(`2`, "admin_list_audit_log", `{}`), http.StatusForbidden, spoof...)
	expect("viewer", "admin_list_audit_log", "FORBIDDEN", 1)

	// Tool names spelled to slip past admin_*: either refused here or
	// unknown downstream, never run. admin_* applies to the names that
	// equal it under case folding; a name with white space at an end or an
	// invisible character is refused; a full-width letter is another name.
	for _, name := range []string{"Admin_reset_key", "ADMIN_RESET_KEY"} {
		post(viewer, adminCall(`3`, name), http.StatusForbidden)
		expect("viewer", name, "FORBIDDEN", 1)
	}
	for _, name := range []string{" admin_reset_key", "admin_reset_key ", "admin\u200breset_key"} {
		post(viewer, adminCall(`3`, name), http.StatusBadRequest)
		expect("viewer", "", "INVALID_ARGUMENTS", 1)
	}
	for _, name := range []string{"ａdmin_reset_key"} {
		post(viewer, adminCall(`3`, name), http.StatusOK)
		expect("viewer", name, "", 1)
	}
	post(viewer, adminCall(`5`, `\u0061dmin_reset_key`), http.StatusForbidden)
	expect("viewer", "admin_reset_key", "FORBIDDEN", 1)
	post(viewer, adminCall(`6`, `admin_reset_key\u0000`), http.StatusBadRequest)
	expect("viewer", "", "INVALID_ARGUMENTS", 1)
	post(viewer, strings.Replace(adminCall(`7`, "admin_reset_key"), "tools/call", `tools\/call`, 1), http.StatusForbidden)
	expect("viewer", "admin_reset_key", "FORBIDDEN", 1)
	// Batch and notification forms.
	got := post(viewer, "["+lookup+","+adminCall(`8`, "admin_reset_key")+`,{"jsonrpc":"2.0","id":9,"method":"tools/list"}]`, http.StatusOK)
	if !strings.Contains(got.body, `"id":8,"error":{"code":-32001`) {
		t.Errorf("viewer batch with admin_reset_key: %s", got.body)
	}
	expect("viewer", "get_customer_record", "", 1)
	expect("viewer", "admin_reset_key", "FORBIDDEN", 1)
	post(viewer, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"admin_reset_key","arguments":{"key_id":"KEY-PRIMARY"}}}`, http.StatusNoContent)
	expect("viewer", "admin_reset_key", "FORBIDDEN", 1)

	// Session riding: admin's session is not the viewer's, on POST or DELETE.
	post(admin, lookup, http.StatusOK, "Mcp-Session-Id", "admin-session")
	expect("admin", "get_customer_record", "", 1)
	post(viewer, lookup, http.StatusNotFound, "Mcp-Session-Id", "admin-session")
	expect("viewer", "get_customer_record", "FORBIDDEN", 1)
	req, _ := http.NewRequest(http.MethodDelete, rg.url+"/mcp", nil)
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Mcp-Session-Id", "admin-session")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("viewer DELETE of admin's session: %v %v; want 404", resp, err)
	} else {
		resp.Body.Close()
	}
	expect("viewer", "", "FORBIDDEN", 1) // a refusal without a tools/call has its record too
	post(viewer, lookup, http.StatusNotFound, "Mcp-Session-Id", "admin-session")
	expect("viewer", "get_customer_record", "FORBIDDEN", 1)

	// Authorization tricks, by hand: twice, two credentials in one, folded
	// (obs-fold: the folded token is admin's own), lower-case scheme with a
	// trailing tab (the viewer's own token).
	listLog := call(`10`, "admin_list_audit_log", `{}`)
	for _, tc := range []struct {
		hdr    string
		status int
		sub    string
		code   string
	}{
		{"Authorization: Bearer viewer-token\r\nAuthorization: Bearer admin-token\r\n", http.StatusUnauthorized, "", "UNAUTHENTICATED"},
		{"Authorization: Bearer viewer-token, Bearer admin-token\r\n", http.StatusUnauthorized, "", "UNAUTHENTICATED"},
		{"Authorization: Bearer viewer-token\r\n admin-token\r\n", http.StatusUnauthorized, "", "UNAUTHENTICATED"},
		{"Authorization: Bearer\r\n admin-token\r\n", http.StatusOK, "admin", ""},
		{"Authorization: bearer viewer-token\t\r\n", http.StatusForbidden, "viewer", "FORBIDDEN"},
	} {
		if status := rawPost(t, gwAddr, tc.hdr, listLog); status != tc.status {
			t.Errorf("raw POST with %q: %d, want %d", tc.hdr, status, tc.status)
		}
		expect(tc.sub, "admin_list_audit_log", tc.code, 1)
	}

	// Without a token, a tools/call whose name cannot be read is recorded too.
	post("", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"","arguments":{}}}`, http.StatusUnauthorized)
	expect("", "", "UNAUTHENTICATED", 1)

	// A real go-sdk client holding the viewer's token.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs := connect(t, ctx, rg.url+"/mcp", "viewer-token")
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_customer_record", Arguments: map[string]any{"customer_id": "CUST-00002"}}); err != nil || res.IsError {
		t.Errorf("go-sdk viewer get_customer_record: %v %+v", err, res)
	}
	expect("viewer", "get_customer_record", "", 1)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "admin_reset_key", Arguments: map[string]any{"key_id": "KEY-PRIMARY"}}); err == nil {
		t.Errorf("go-sdk viewer admin_reset_key: no error")
	}
	expect("viewer", "admin_reset_key", "FORBIDDEN", 1)
	cs.Close()

	// The refund server's spend cap (500 per caller) raced by 12 refunds of 100.
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			rg.post(t, "Bearer race-token", call(fmt.Sprint(i), "trigger_refund",
				`{"customer_id":"CUST-00001","amount":100,"reason":"racing the refund cap"}`), "Mcp-Protocol-Version", "2025-11-25")
		})
	}
	wg.Wait()
	expect("racer", "trigger_refund", "", 12)

	// The gateway's per-user rate (20/1h) over refused calls (free), ten
	// sessions and a batch: twenty calls pass, in all.
	for range 3 {
		post("Bearer rate-token", adminCall(`1`, "admin_reset_key"), http.StatusForbidden)
	}
	expect("rater", "admin_reset_key", "FORBIDDEN", 3)
	for i := range 10 {
		post("Bearer rate-token", lookup, http.StatusOK, "Mcp-Session-Id", fmt.Sprintf("rater-%d", i))
	}
	expect("rater", "get_customer_record", "", 10)
	var batch []string
	for i := range 12 {
		batch = append(batch, call(fmt.Sprint(i), "get_customer_record", `{"customer_id":"CUST-00001"}`))
	}
	got = post("Bearer rate-token", "["+strings.Join(batch, ",")+"]", http.StatusOK, "Mcp-Session-Id", "rater-batch")
	if n := strings.Count(got.body, "RATE_LIMIT_EXCEEDED"); n != 2 {
		t.Errorf("rater's batch of 12 after 10 calls under 20/1h: %d refused, want 2: %s", n, got.body)
	}
	expect("rater", "get_customer_record", "", 10)
	expect("rater", "get_customer_record", "RATE_LIMIT_EXCEEDED", 2)
	post("Bearer rate-token", lookup, http.StatusTooManyRequests, "Mcp-Session-Id", "rater-new")
	expect("rater", "get_customer_record", "RATE_LIMIT_EXCEEDED", 1)

	// What reached the refund server.
	resp, err := http.Get(down + "/_received")
	if err != nil {
		t.Fatal(err)
	}
	var received []struct {
		Method, Tool, Subject, Role string
		RequestID                   string `json:"request_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&received); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	stopGW()
	stopRefund()

	// The gateway's trail: one outcome per tools/call sent.
	type event struct {
		CorrelationID string `json:"correlation_id"`
		RequestID     string `json:"request_id"`
		Subject, Tool string
		Phase, Code   string
		Allowed       bool
	}
	var recorded []outcome
	cids := map[string]int{}
	gwByID := map[string]event{}
	for _, e := range jsonLines[event](t, gwAudit) {
		if e.Phase != "outcome" {
			continue
		}
		gwByID[e.CorrelationID+" "+e.Tool] = e
		if e.CorrelationID == "" {
			t.Errorf("gateway outcome record without a correlation id: %+v", e)
		}
		recorded = append(recorded, outcome{e.Subject, e.Tool, e.Code})
		if e.Code == "" {
			cids[e.CorrelationID+" "+e.Tool]++
		}
	}
	sortOutcomes := func(o []outcome) []outcome {
		return slices.SortedFunc(slices.Values(o), func(a, b outcome) int {
			return strings.Compare(a.Subject+"\x00"+a.Tool+"\x00"+a.Code, b.Subject+"\x00"+b.Tool+"\x00"+b.Code)
		})
	}
	if w, g := sortOutcomes(sent), sortOutcomes(recorded); !slices.Equal(w, g) {
		t.Errorf("gateway outcome records:\n%v\nwant one per tools/call sent:\n%v", g, w)
	}

	// The refund server's side: only the gateway's principals, never a
	// forged one; every tools/call it received is one the gateway recorded
	// as forwarded (same request id and tool), and nothing from the
	// viewer ran an admin tool.
	forwarded := 0
	for _, r := range received {
		switch r.Subject + "/" + r.Role {
		case "viewer/viewer", "admin/admin", "racer/viewer", "rater/viewer":
		default:
			t.Errorf("refund server received %+v: not a principal the gateway named", r)
		}
		if r.Method != "tools/call" {
			continue
		}
		forwarded++
		if r.Subject != "admin" && strings.HasPrefix(r.Tool, "admin_") {
			t.Errorf("refund server received %+v", r)
		}
		if cids[r.RequestID+" "+r.Tool] == 0 {
			t.Errorf("refund server received %+v, which the gateway has no forwarded record of", r)
		}
		cids[r.RequestID+" "+r.Tool]--
	}
	var refundOut []outcome
	processed := 0
	for _, e := range jsonLines[event](t, refundAudit) {
		if e.Phase != "outcome" {
			continue
		}
		refundOut = append(refundOut, outcome{e.Subject, e.Tool, e.Code})
		// The two trails join: the refund server's record names the
		// gateway's request (Options.RequestIDHeader), whose record has
		// the same caller and tool.
		if g, ok := gwByID[e.RequestID+" "+e.Tool]; !ok || g.Subject != e.Subject || g.Code != "" {
			t.Errorf("refund server's record %+v joins no forwarded gateway record (request_id %q)", e, e.RequestID)
		}
		if e.Subject == "racer" && e.Allowed {
			processed++
		}
	}
	if len(refundOut) != forwarded {
		t.Errorf("refund server: %d outcome records for %d tools/call received: %v", len(refundOut), forwarded, refundOut)
	}
	if processed != 5 {
		t.Errorf("12 raced refunds of 100 under a cap of 500: %d processed, want 5", processed)
	}

	// No token, and no argument value outside the refund's opted-in
	// record of customer_id and amount, in any log line or the gateway's
	// audit.
	gwTrail, _ := os.ReadFile(gwAudit)
	refundTrail, _ := os.ReadFile(refundAudit)
	for name, text := range map[string]string{"gateway stderr": gwLog(), "refund stderr": refundLog(),
		"gateway audit": string(gwTrail), "refund audit": string(refundTrail)} {
		secrets := []string{"viewer-token", "admin-token", "race-token", "rate-token", "KEY-PRIMARY", "racing the refund cap"}
		if name != "refund audit" {
			secrets = append(secrets, "CUST-0000")
		}
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %q:\n%s", name, s, text)
			}
		}
	}
}
