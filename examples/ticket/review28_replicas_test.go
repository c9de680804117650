package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// replica is one `ticket serve-http` process of the built binary.
type replica struct {
	cmd    *exec.Cmd
	base   string
	stderr *syncBuffer
	done   chan struct{}
}

// startReplica starts the built binary as `serve-http --port 0 args...`
// with env added to its environment and returns it once it listens; the
// test's end kills it if it still runs.
func startReplica(t *testing.T, env []string, args ...string) *replica {
	t.Helper()
	cmd := exec.Command(ticketBinary(t), append([]string{"serve-http", "--port", "0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	r := &replica{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = r.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-r.done })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("serve-http %q: no address line: %v; stderr:\n%s", args, err, r.stderr)
	}
	go io.Copy(io.Discard, out)
	r.base = strings.Fields(strings.TrimPrefix(line, "ticket: serving "))[0]
	return r
}

// signal sends sig to r and waits up to 30 s for it to exit.
func (r *replica) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30 s after %v; stderr:\n%s", sig, r.stderr)
	}
}

// restTry is restPost for calls that may meet a replica going away: err
// is set when no whole answer came.
func restTry(base, tool, tok, sid, body string) (restReply, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/tools/"+tool+"/call", strings.NewReader(body))
	if err != nil {
		return restReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return restReply{}, err
	}
	defer resp.Body.Close()
	out := restReply{status: resp.StatusCode, header: resp.Header}
	if err := json.NewDecoder(resp.Body).Decode(&out.body); err != nil {
		return restReply{}, err
	}
	return out, nil
}

// TestReview28ReplicasShareBudgetsAndTrail: two serve-http processes of
// the built binary, started at once against one Redis and one fresh
// PostgreSQL database, serving one client whose calls alternate between
// them: a REST session's call budget and the user's are each one budget
// (the answers are one server's), and the audit_log table holds every
// decision of both once, under its session and subject.
func TestReview28ReplicasShareBudgetsAndTrail(t *testing.T) {
	rd := testsvc.StartRedis(t)
	pg := testsvc.StartPostgres(t)
	url, db := newPostgresDB(t, pg, "review28_share")
	cfg := configFile(t, "calls_per_user: 30", "calls_per_user: 9")
	env := []string{"TICKET_MCP_AUDIT_KEY=" + strings.Repeat("ab", 32)}
	args := []string{"--config", cfg, "--redis", rd.Addr, "--audit-postgres", url}

	// Started at once, on a database without the table: both create it.
	reps := make([]*replica, 2)
	var wg sync.WaitGroup
	for i := range reps {
		wg.Go(func() { reps[i] = startReplica(t, env, append(args, "--audit-dir", t.TempDir())...) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// One REST session, calls alternating: 5 answers, the 6th refused.
	var got []int
	for i := range 6 {
		got = append(got, restPost(t, reps[i%2].base, "search_docs", "token-alice", "alt", searchBody).status)
	}
	if fmt.Sprint(got) != "[200 200 200 200 200 429]" {
		t.Errorf("one session over two replicas: %v, want five 200 and a 429", got)
	}
	// The user's budget (9): 5 spent; four new sessions, one call each,
	// alternating, then a fifth refused.
	got = nil
	for i := range 5 {
		got = append(got, restPost(t, reps[i%2].base, "search_docs", "token-alice", fmt.Sprintf("u%d", i), searchBody).status)
	}
	if fmt.Sprint(got) != "[200 200 200 200 429]" {
		t.Errorf("one user over two replicas: %v, want four 200 and a 429", got)
	}

	for _, r := range reps {
		r.signal(t, syscall.SIGTERM)
	}
	evs := pgEvents(t, db, audit.Filter{})
	if len(evs) != 11 {
		t.Fatalf("audit_log: %d records, want 11 (one per call)", len(evs))
	}
	seen := map[string]bool{}
	allowed := 0
	for _, e := range evs {
		if e.Subject != "alice" || !strings.HasPrefix(e.SessionID, "rest-") || !strings.HasSuffix(e.SessionID, "@alice") {
			t.Errorf("record %+v: want alice's REST session", e)
		}
		if seen[e.CorrelationID] {
			t.Errorf("correlation id %s twice", e.CorrelationID)
		}
		seen[e.CorrelationID] = true
		if e.Allowed {
			allowed++
		}
	}
	if allowed != 9 {
		t.Errorf("%d allowed records, want 9", allowed)
	}
	if n := len(pgEvents(t, db, audit.Filter{SessionID: "rest-alt@alice"})); n != 6 {
		t.Errorf("session rest-alt@alice: %d records, want 6", n)
	}
}

// TestReview28MCPSessionOnOtherReplica: an /mcp session belongs to the
// process that opened it. A request naming it that lands on another replica
// is refused 404 (the go-sdk's "session not found"), runs no tool and
// takes no one's identity, whoever sends it.
func TestReview28MCPSessionOnOtherReplica(t *testing.T) {
	rd := testsvc.StartRedis(t)
	a := startReplica(t, nil, "--audit-dir", t.TempDir(), "--redis", rd.Addr)
	bDir := t.TempDir()
	b := startReplica(t, nil, "--audit-dir", bDir, "--redis", rd.Addr)

	client := mcp.NewClient(&mcp.Implementation{Name: "review28", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: a.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{tok: "token-alice", base: http.DefaultTransport}}}
	cs, err := client.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	sid := cs.ID()

	for _, tok := range []string{"token-alice", "token-bob", ""} {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":""}}}`
		req, _ := http.NewRequest(http.MethodPost, b.base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("token %q: session of A on B: %d %s, want 404 session not found", tok, resp.StatusCode, data)
		}
	}
	b.signal(t, syscall.SIGTERM)
	evs, err := audit.QueryJSONL(bDir+"/"+auditJSONL, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 0 {
		t.Errorf("B recorded %d calls for a session it does not have: %+v", len(evs), evs)
	}
}

// TestReview28ReplicaStopsKeepTheTrail: two replicas on one PostgreSQL
// take real writes at once; one is stopped by SIGTERM and the other killed
// by SIGKILL while calls run. Every call the SIGTERMed one answered has its
// record in audit_log, and every ticket either created has its durable
// intent record, SIGKILL or not.
func TestReview28ReplicaStopsKeepTheTrail(t *testing.T) {
	rd := testsvc.StartRedis(t)
	pg := testsvc.StartPostgres(t)
	url, db := newPostgresDB(t, pg, "review28_stop")
	cfg := configFile(t, "dry_run: true", "dry_run: false",
		"allowed_write_tools: []", "allowed_write_tools: [create_ticket]",
		"calls_per_min: 5", "calls_per_min: 100000",
		"cost_per_session: 10", "cost_per_session: 1000000",
		"calls_per_user: 30", "calls_per_user: 100000",
		"cost_per_user: 60", "cost_per_user: 1000000")
	args := []string{"--config", cfg, "--redis", rd.Addr, "--audit-postgres", url}
	term := startReplica(t, nil, append(args, "--audit-dir", t.TempDir())...)
	kill := startReplica(t, nil, append(args, "--audit-dir", t.TempDir())...)

	type answer struct {
		rep   string
		reply restReply
	}
	var mu sync.Mutex
	var answers []answer
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				rep, name := term, "term"
				if (w+i)%2 == 1 {
					rep, name = kill, "kill"
				}
				r, err := restTry(rep.base, "create_ticket", "token-alice", fmt.Sprintf("w%d", w),
					`{"arguments": {"title": "t", "body": "b"}}`)
				if err == nil {
					mu.Lock()
					answers = append(answers, answer{name, r})
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	kill.cmd.Process.Signal(syscall.SIGKILL)
	<-kill.done
	time.Sleep(200 * time.Millisecond)
	term.signal(t, syscall.SIGTERM)
	close(stop)
	wg.Wait()

	evs := pgEvents(t, db, audit.Filter{})
	outcomes := map[string]int{}
	intents := map[string]int{}
	for _, e := range evs {
		if e.Phase == audit.PhaseIntent {
			intents[e.CorrelationID]++
		} else {
			outcomes[e.CorrelationID]++
		}
	}
	created := map[string]int{}
	for _, a := range answers {
		if a.reply.status != 200 {
			t.Errorf("%s: %d %v", a.rep, a.reply.status, a.reply.body)
			continue
		}
		created[a.rep]++
	}
	t.Logf("answered: %v; records: %d outcomes, %d intents", created, len(outcomes), len(intents))
	for id, n := range outcomes {
		if n != 1 {
			t.Errorf("correlation %s: %d outcome records", id, n)
		}
	}
	for id, n := range intents {
		if n != 1 {
			t.Errorf("correlation %s: %d intent records", id, n)
		}
	}
	if len(intents) < created["term"]+created["kill"] {
		t.Errorf("%d intent records, fewer than the %d tickets answered", len(intents), created["term"]+created["kill"])
	}
	if len(outcomes) < created["term"] {
		t.Errorf("%d outcome records, fewer than the %d calls the SIGTERMed replica answered", len(outcomes), created["term"])
	}
	t.Logf("outcomes missing (answered, none recorded): up to %d", created["term"]+created["kill"]-len(outcomes))
}

// TestReview28ReplicasWithOtherLimits: the README's warning about
// replicas on one Redis whose rate_limit differs. A limit's state is keyed
// by its kind, scope and window: a replica with another window_seconds
// keeps budgets of its own, so a client alternating between the two gets
// both.
func TestReview28ReplicasWithOtherLimits(t *testing.T) {
	rd := testsvc.StartRedis(t)
	a := startServeHTTP(t, "--audit-dir", t.TempDir(), "--redis", rd.Addr)
	otherWindow := startServeHTTP(t, "--audit-dir", t.TempDir(), "--redis", rd.Addr,
		"--config", configFile(t, "window_seconds: 60", "window_seconds: 61"))

	ok := 0
	for i := range 12 {
		base := a.base
		if i%2 == 1 {
			base = otherWindow.base
		}
		if restPost(t, base, "search_docs", "token-alice", "w", searchBody).status == 200 {
			ok++
		}
	}
	if ok != 10 {
		t.Errorf("one session over replicas with windows 60 s and 61 s: %d calls answered, want 10 (5 each)", ok)
	}

}
