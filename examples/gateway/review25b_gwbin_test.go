//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// r25bDownstream is a downstream that answers every POST with an empty
// result under the request's own id; while held, it keeps the calls that
// arrive waiting until release.
type r25bDownstream struct {
	*httptest.Server
	arrived atomic.Int64
	mu      sync.Mutex
	gate    chan struct{} // nil: not held
}

func newR25bDownstream(t *testing.T) *r25bDownstream {
	t.Helper()
	d := &r25bDownstream{}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(body, &msg)
		d.arrived.Add(1)
		d.mu.Lock()
		gate := d.gate
		d.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-time.After(8 * time.Second):
			}
		}
		if msg.ID == nil {
			msg.ID = json.RawMessage("null")
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, msg.ID)
	}))
	t.Cleanup(d.Close)
	t.Cleanup(d.release)
	return d
}

func (d *r25bDownstream) hold() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gate = make(chan struct{})
}

func (d *r25bDownstream) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gate != nil {
		close(d.gate)
		d.gate = nil
	}
}

// awaitArrived waits until n calls reached the downstream in all.
func (d *r25bDownstream) awaitArrived(t *testing.T, n int64, stderr fmt.Stringer) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); d.arrived.Load() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls reached the downstream, want %d; stderr:\n%s", d.arrived.Load(), n, stderr)
		}
	}
}

// r25bBuild builds the gateway binary into a temporary directory.
func r25bBuild(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the gateway binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "gateway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// r25bStart starts the gateway binary with MCP_GATEWAY_TOKENS set to
// tokens (unset when empty) and args, on a free loopback port, and waits
// until it answers /healthz. It returns the process and its base URL.
func r25bStart(t *testing.T, bin, tokens string, args ...string) (*gatewayProc, string) {
	t.Helper()
	port := loopbackPort(t)
	args = append([]string{"--port", port}, args...)
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCP_GATEWAY_TOKENS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if tokens != "" {
		cmd.Env = append(cmd.Env, "MCP_GATEWAY_TOKENS="+tokens)
	}
	p := &gatewayProc{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	base := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			return p, base
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("gateway exited at start: %v; stderr:\n%s", err, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway did not answer /healthz; stderr:\n%s", p.stderr)
		}
	}
}

// r25bAnswer is what a client got for one call.
type r25bAnswer struct {
	status     int // -1: no answer
	retryAfter string
	body       string
}

// r25bCall POSTs a tools/call of tool with arguments args (JSON) as tok
// to the gateway at base, under ctx.
func r25bCall(ctx context.Context, base, tok, tool, args string) r25bAnswer {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return r25bAnswer{status: -1, body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return r25bAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(b)}
}

// r25bConcurrent makes n calls at once and returns their answers.
func r25bConcurrent(n int, call func(i int) r25bAnswer) []r25bAnswer {
	out := make([]r25bAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = call(i) })
	}
	wg.Wait()
	return out
}

// r25bWorkers makes n × per calls from n clients at once, each making
// its calls one after the other, and returns their answers.
func r25bWorkers(n, per int, call func(i int) r25bAnswer) []r25bAnswer {
	out := make([]r25bAnswer, n*per)
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			for i := range per {
				out[w*per+i] = call(w*per + i)
			}
		})
	}
	wg.Wait()
	return out
}

// r25bCount counts the answers of each status.
func r25bCount(answers []r25bAnswer) map[int]int {
	m := map[int]int{}
	for _, a := range answers {
		m[a.status]++
	}
	return m
}

// r25bEvents reads every audit event of a JSONL file or an SQLite .db.
func r25bEvents(t *testing.T, path string) []audit.Event {
	t.Helper()
	if strings.HasSuffix(path, ".db") {
		db, err := audit.OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		evs, err := audit.QuerySQL(context.Background(), db, audit.SQLite, audit.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []audit.Event
	for e, err := range audit.ReadJSONL(f) {
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// r25bArgs is the argument object of call i: its own, so that its audit
// record's args_sha256 tells it apart.
func r25bArgs(i int) string { return fmt.Sprintf(`{"customer_id":"CUST-%05d"}`, i) }

// TestReview25bShutdownInFlightAudit stops the gateway binary with SIGTERM
// and with SIGINT while calls wait on the downstream, with --audit to a
// JSONL file and to an SQLite .db, then with the other signal: a new
// connection is refused at once, the second signal does not cut the wait,
// every call in flight is answered 200 once the downstream answers, the
// exit status is 0, and every call, those in flight included, has its one
// outcome record in the audit trail.
func TestReview25bShutdownInFlightAudit(t *testing.T) {
	bin := r25bBuild(t)
	for _, store := range []string{"audit.jsonl", "audit.db"} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(strings.ReplaceAll(store, ".", "_")+"_"+sig.String(), func(t *testing.T) {
				down := newR25bDownstream(t)
				auditPath := filepath.Join(t.TempDir(), store)
				p, base := r25bStart(t, bin, "", "--upstream", down.URL+"/mcp", "--audit", auditPath, "--timeout", "10")
				for i := range 3 {
					if a := r25bCall(context.Background(), base, "admin-token", "get_customer_record", r25bArgs(i)); a.status != 200 {
						t.Fatalf("call %d before the shutdown: %+v", i, a)
					}
				}
				down.hold()
				const inFlight = 6
				answers := make(chan r25bAnswer, inFlight)
				for i := range inFlight {
					go func() {
						answers <- r25bCall(context.Background(), base, "admin-token", "get_customer_record", r25bArgs(100+i))
					}()
				}
				down.awaitArrived(t, 3+inFlight, p.stderr)
				if err := p.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				refused := false
				for deadline := time.Now().Add(3 * time.Second); !refused && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
					if err != nil {
						refused = true
					} else {
						c.Close()
					}
				}
				if !refused {
					t.Errorf("new connections still accepted 3 s after %v", sig)
				}
				// A second signal during the wait does not cut it short.
				if err := p.cmd.Process.Signal(syscall.SIGTERM + syscall.SIGINT - sig); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
				down.release()
				for i := range inFlight {
					if a := <-answers; a.status != 200 {
						t.Errorf("call %d in flight at %v: %+v, want 200", i, sig, a)
					}
				}
				if code := p.wait(t, 15*time.Second); code != 0 {
					t.Errorf("exit status %d, want 0; stderr:\n%s", code, p.stderr)
				}
				seen := map[string]int{}
				for _, e := range r25bEvents(t, auditPath) {
					if e.Phase == "outcome" && e.Allowed && e.Tool == "get_customer_record" {
						seen[e.ArgsSHA256]++
					}
				}
				if len(seen) != 3+inFlight {
					t.Errorf("%d calls have an outcome record, want %d; stderr:\n%s", len(seen), 3+inFlight, p.stderr)
				}
				for h, n := range seen {
					if n != 1 {
						t.Errorf("args %s: %d outcome records, want 1", h, n)
					}
				}
			})
		}
	}
}

// TestReview25bHangupUnderLoad rotates the JSONL --audit file five times
// (rename, then SIGHUP, as logrotate's postrotate does) while four clients
// call the gateway binary without pause: across the renamed files and the
// last one, every call answered has exactly one outcome record (none lost,
// none written twice), and no file holds a torn line.
func TestReview25bHangupUnderLoad(t *testing.T) {
	bin := r25bBuild(t)
	down := newR25bDownstream(t)
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	p, base := r25bStart(t, bin, "", "--upstream", down.URL+"/mcp", "--audit", auditPath)
	var next, answered atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failed sync.Map
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := int(next.Add(1))
				if a := r25bCall(context.Background(), base, "admin-token", "get_customer_record", r25bArgs(i)); a.status != 200 {
					failed.Store(i, a)
					continue
				}
				answered.Add(1)
			}
		})
	}
	files := []string{auditPath}
	for k := range 5 {
		time.Sleep(100 * time.Millisecond)
		rotated := fmt.Sprintf("%s.%d", auditPath, k)
		if err := os.Rename(auditPath, rotated); err != nil {
			t.Fatal(err)
		}
		files = append(files, rotated)
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); strings.Count(p.stderr.String(), "audit file reopened") < k+1; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("reopen %d not logged; stderr:\n%s", k+1, p.stderr)
			}
		}
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	failed.Range(func(k, v any) bool { t.Errorf("call %v: %+v", k, v); return true })
	if code := p.stopAndWait(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, p.stderr)
	}
	seen := map[string]int{}
	total := 0
	for _, f := range files {
		for _, e := range r25bEvents(t, f) {
			if e.Phase == "outcome" {
				seen[e.ArgsSHA256]++
				total++
			}
		}
	}
	if n := answered.Load(); int64(len(seen)) != n || int64(total) != n {
		t.Errorf("%d calls answered; the audit files hold %d records of %d calls", n, total, len(seen))
	}
	t.Logf("%d calls across %d files", answered.Load(), len(files))
}

// TestReview25bLimiterExactCounts runs the gateway binary with --rate 7/1h
// and --inflight 3 and calls it from many clients at once: with the
// downstream held, exactly 3 of 10 concurrent calls of one user reach it
// and 7 get 429 with Retry-After (an 11th, whose client hangs up while
// waiting, is refused and recorded too); once released, three clients of
// the user's find exactly 4 calls of the rate left, and three of another
// user's find 7 of its own, the calls the policy refused counting for
// nothing; the audit file holds each call's record under its code.
func TestReview25bLimiterExactCounts(t *testing.T) {
	bin := r25bBuild(t)
	down := newR25bDownstream(t)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	tokens := `{"tok-alice-0123456789":{"sub":"alice","roles":["admin"]},"tok-bob-0123456789":{"sub":"bob","roles":["viewer"]}}`
	p, base := r25bStart(t, bin, tokens, "--upstream", down.URL+"/mcp", "--rate", "7/1h", "--inflight", "3", "--audit", auditPath)
	alice := func(ctx context.Context, i int) r25bAnswer {
		return r25bCall(ctx, base, "tok-alice-0123456789", "get_customer_record", r25bArgs(i))
	}

	down.hold()
	held := make(chan []r25bAnswer, 1)
	go func() {
		held <- r25bConcurrent(10, func(i int) r25bAnswer { return alice(context.Background(), i) })
	}()
	down.awaitArrived(t, 3, p.stderr)
	// An 11th call whose client hangs up while three are in flight.
	ctx, cancel := context.WithCancel(context.Background())
	hung := make(chan r25bAnswer, 1)
	go func() { hung <- alice(ctx, 50) }()
	time.Sleep(200 * time.Millisecond)
	cancel()
	<-hung
	time.Sleep(100 * time.Millisecond)
	if got := down.arrived.Load(); got != 3 {
		t.Errorf("%d calls reached the held downstream, want 3 (--inflight 3)", got)
	}
	down.release()
	answers := <-held
	if c := r25bCount(answers); c[200] != 3 || c[429] != 7 {
		t.Errorf("10 concurrent calls with --inflight 3: %v, want 3 × 200 and 7 × 429", c)
	}
	for _, a := range answers {
		if a.status == 429 && (a.retryAfter == "" || !strings.Contains(a.body, "-32029")) {
			t.Errorf("a 429 without Retry-After or -32029: %+v", a)
		}
	}

	// The rate: 3 of 7 used, whatever the 429s were.
	// Three clients at once (--inflight 3: none is refused for that).
	answers = r25bWorkers(3, 7, func(i int) r25bAnswer { return alice(context.Background(), 200+i) })
	if c := r25bCount(answers); c[200] != 4 || c[429] != 17 {
		t.Errorf("21 calls from 3 clients with 4 of --rate 7/1h left: %v, want 4 × 200 and 17 × 429", c)
	}
	for range 5 {
		if a := r25bCall(context.Background(), base, "tok-bob-0123456789", "admin_reset_key", `{}`); a.status != 403 {
			t.Fatalf("bob's admin call: %+v, want 403", a)
		}
	}
	answers = r25bWorkers(3, 7, func(i int) r25bAnswer {
		return r25bCall(context.Background(), base, "tok-bob-0123456789", "get_customer_record", r25bArgs(300+i))
	})
	if c := r25bCount(answers); c[200] != 7 || c[429] != 14 {
		t.Errorf("another user's 21 calls from 3 clients: %v, want 7 × 200 and 14 × 429", c)
	}
	if code := p.stopAndWait(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, p.stderr)
	}
	codes := map[string]int{}
	for _, e := range r25bEvents(t, auditPath) {
		codes[e.Subject+" "+e.Code]++
	}
	want := map[string]int{
		"alice ": 3 + 4, "alice CONCURRENCY_LIMIT_EXCEEDED": 7 + 1, "alice RATE_LIMIT_EXCEEDED": 17,
		"bob ": 7, "bob RATE_LIMIT_EXCEEDED": 14, "bob FORBIDDEN": 5,
	}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("audit records by subject and code: %v, want %v", codes, want)
	}
}

// TestReview25bLogsHoldNoSecrets runs the gateway binary with real tokens,
// an --upstream whose query holds a key, and a --policy with an argument
// limit, makes calls that are allowed, refused by role, by the argument
// limit, by the rate, for a bad token, a token in the query, a body that is
// not JSON, and checks that no line of its log holds a token, the
// upstream's key or an argument's value.
func TestReview25bLogsHoldNoSecrets(t *testing.T) {
	bin := r25bBuild(t)
	down := newR25bDownstream(t)
	pol := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(pol, []byte(`{"tools":[{"name":"trigger_refund","class":"write","arg_limits":[{"field":"amount","max":100}]}],
		"role_rules":[{"pattern":"admin_*","roles":["admin"]}],"write_allowlist":["trigger_refund"],"default":{"class":"read"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"tokALPHAsecret0123456789", "tokBRAVOsecret0123456789", "QUERYKEYsecret", "badTOKENsecret987",
		"ARGsecretVALUE1", "ARGsecretVALUE2", "7777777123", "QSTRINGtokenSECRET", "BODYsecretXYZ"}
	tokens := `{"tokALPHAsecret0123456789":{"sub":"alice","roles":["admin"]},"tokBRAVOsecret0123456789":"viewer"}`
	p, base := r25bStart(t, bin, tokens, "--upstream", down.URL+"/mcp?api_key=QUERYKEYsecret", "--policy", pol, "--rate", "3/1h",
		"--audit", filepath.Join(t.TempDir(), "audit.jsonl"))
	bg := context.Background()
	r25bCall(bg, base, "tokALPHAsecret0123456789", "get_customer_record", `{"customer_id":"ARGsecretVALUE1"}`)
	r25bCall(bg, base, "tokBRAVOsecret0123456789", "admin_reset_key", `{"key_id":"ARGsecretVALUE2"}`)
	r25bCall(bg, base, "tokBRAVOsecret0123456789", "trigger_refund", `{"amount":7777777123,"note":"ARGsecretVALUE2"}`)
	r25bCall(bg, base, "tokBRAVOsecret0123456789", "trigger_refund", `{"amount":"7777777123"}`)
	r25bCall(bg, base, "badTOKENsecret987", "get_customer_record", `{"customer_id":"ARGsecretVALUE1"}`)
	for range 4 {
		r25bCall(bg, base, "tokALPHAsecret0123456789", "get_customer_record", `{"customer_id":"ARGsecretVALUE1"}`)
	}
	for _, raw := range []struct{ auth, query, body string }{
		{"Bearer tokALPHAsecret0123456789", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":"BODYsecretXYZ"}`},
		{"Basic tokBRAVOsecret0123456789", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"", "?access_token=QSTRINGtokenSECRET", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"Bearer badTOKENsecret987 extra", "", `{"jsonrpc":"2.0","id":"BODYsecretXYZ","method":"tools/call","params":{"name":"get_customer_record"}}`},
		{"Bearer tokALPHAsecret0123456789", "", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"ARGsecretVALUE1"}}},{"jsonrpc":"2.0","id":2,"method":"nope/other"}]`},
	} {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp"+raw.query, strings.NewReader(raw.body))
		if raw.auth != "" {
			req.Header.Set("Authorization", raw.auth)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	if code := p.stopAndWait(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, p.stderr)
	}
	logs := p.stderr.String()
	for _, line := range strings.Split(logs, "\n") {
		for _, s := range secrets {
			if strings.Contains(line, s) {
				t.Errorf("a log line holds %q: %s", s, line)
			}
		}
	}
	for _, want := range []string{"msg=allow", "msg=deny", "UNAUTHENTICATED", "RATE_LIMIT_EXCEEDED"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q (the calls did not run as meant):\n%s", want, logs)
		}
	}
}
