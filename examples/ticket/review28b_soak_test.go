package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview28bStalledBodyIsClosed: serve-http had a header timeout and an
// idle timeout but no read timeout, so a client that sent a POST's headers
// and then stalled in its body held its connection, a goroutine and its
// buffers for ever: /mcp reads the body before anything checks a token, so
// anyone who reaches the server controls that growth. The server now closes
// a connection whose request has not arrived within httpReadTimeout.
// Once the body is in, the deadline is lifted: the streams and slow calls
// of TestReview19dIdleTimeoutSparesStreamsAndSlowCalls, quiet for five read
// timeouts, go on.
func TestReview28bStalledBodyIsClosed(t *testing.T) {
	defer func(d time.Duration) { httpReadTimeout = d }(httpReadTimeout)
	httpReadTimeout = 300 * time.Millisecond
	base := startHTTP(t, newTestApp(t, nil))
	addr := strings.TrimPrefix(base, "http://")
	for _, req := range []string{
		"POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":",
		"POST /tools/search_docs/call HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer token-alice\r\nX-Session-Id: s1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"arguments\":",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: a connection stalled in its body was still open after %v", strings.Fields(req)[1], time.Since(start).Round(time.Second))
		}
	}
	t.Run("streams_and_slow_calls", func(t *testing.T) {
		httpReadTimeout = 100 * time.Millisecond
		TestReview19dIdleTimeoutSparesStreamsAndSlowCalls(t)
	})
}

// r28bSoakDuration is the load's length: 3 s, or SOAK_SECONDS by hand.
func r28bSoakDuration(t *testing.T) time.Duration {
	t.Helper()
	if v := os.Getenv("SOAK_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SOAK_SECONDS=%q", v)
		}
		return time.Duration(n) * time.Second
	}
	return 3 * time.Second
}

// r28bProc is what /proc shows of a process: its descriptors, the files
// among them, its threads and its resident memory in KiB.
type r28bProc struct {
	fds, threads, rssKiB int
	files                []string
}

func r28bStat(t *testing.T, pid int) r28bProc {
	t.Helper()
	var p r28bProc
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	p.fds = len(ents)
	for _, e := range ents {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); err == nil && strings.HasPrefix(l, "/") {
			p.files = append(p.files, l)
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "Threads:":
			p.threads, _ = strconv.Atoi(f[1])
		case "VmRSS:":
			p.rssKiB, _ = strconv.Atoi(f[1])
		}
	}
	return p
}

// r28bJSONLIDs reads the correlation ids of every record in the files
// matching dir/audit.jsonl*, failing on a line that is not a record.
func r28bJSONLIDs(t *testing.T, dir string) (ids map[string]int, files int) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, auditJSONL+"*"))
	if err != nil {
		t.Fatal(err)
	}
	ids = map[string]int{}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if line == "" {
				continue
			}
			var ev audit.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.CorrelationID == "" {
				t.Fatalf("%s line %d: not a record (%v): %.200s", filepath.Base(name), i+1, err, line)
			}
			ids[ev.CorrelationID]++
		}
	}
	return ids, len(names)
}

// TestReview28bSoakTicketBinaryRotation drives `ticket serve-http` (the
// built binary) for 3 s (SOAK_SECONDS for longer, by hand) with /mcp
// sessions opened by alice, bob and no token and abandoned without DELETE,
// sessions deleted, GET streams opened and cut, calls over /mcp cut under
// way, REST calls in new sessions, and connections stalled in a body,
// while audit.jsonl is rotated every 300 ms (renamed, then SIGHUP, as the
// README documents). Then: the process holds no rotated file open, every
// record of audit.db is in exactly one JSONL file (none lost or doubled
// across the rotations, no torn line), every REST call answered has its
// record, and once the clients hang up the descriptors are back near the
// baseline.
func TestReview28bSoakTicketBinaryRotation(t *testing.T) {
	d := r28bSoakDuration(t)
	dir := t.TempDir()
	cmd := exec.Command(ticketBinary(t), "serve-http", "--port", "0", "--audit-dir", dir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v; stderr:\n%s", err, stderr)
	}
	base := strings.Fields(strings.TrimPrefix(line, "ticket: serving "))[0]
	host := strings.TrimPrefix(base, "http://")
	pid := cmd.Process.Pid

	var answered sync.Map // correlation id of a REST answer -> true
	var restAnswered, restOK atomic.Int64
	load := func(ctx context.Context) []net.Conn {
		tr := &http.Transport{MaxIdleConnsPerHost: 4}
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr}
		do := func(ctx context.Context, method, path, tok, sid string, hdr map[string]string, body string) (*http.Response, []byte) {
			req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
			if err != nil {
				return nil, nil
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			if sid != "" {
				req.Header.Set("Mcp-Session-Id", sid)
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			}
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := hc.Do(req)
			if err != nil {
				return nil, nil
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp, b
		}
		open := func(ctx context.Context, tok string) string {
			resp, _ := do(ctx, "POST", "/mcp", tok, "", nil, review17Init)
			if resp == nil || resp.Header.Get("Mcp-Session-Id") == "" {
				return ""
			}
			sid := resp.Header.Get("Mcp-Session-Id")
			do(ctx, "POST", "/mcp", tok, sid, nil, review17Listed)
			return sid
		}
		toks := []string{"token-alice", "token-bob", ""}
		var (
			mu   sync.Mutex
			slow []net.Conn
			wg   sync.WaitGroup
		)
		for w := range 4 {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					tok := toks[(i+w)%len(toks)]
					switch (i + w) % 6 {
					case 0: // opened and abandoned, without DELETE
						open(ctx, tok)
					case 1: // opened, called, deleted
						if sid := open(ctx, tok); sid != "" {
							do(ctx, "POST", "/mcp", tok, sid, nil, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_tools","arguments":{}}}`)
							do(ctx, "DELETE", "/mcp", tok, sid, nil, "")
						}
					case 2: // a GET stream opened and cut
						if sid := open(ctx, tok); sid != "" {
							cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
							do(cctx, "GET", "/mcp", tok, sid, nil, "")
							cancel()
						}
					case 3: // a call cut under way
						if sid := open(ctx, tok); sid != "" {
							cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
							do(cctx, "POST", "/mcp", tok, sid, nil, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":""}}}`)
							cancel()
						}
					case 4: // REST, a new session each time
						cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
						resp, b := do(cctx, "POST", "/tools/search_docs/call", tok, "", map[string]string{"X-Session-Id": fmt.Sprintf("s%d-%d", w, i)}, `{"arguments":{"query":""}}`)
						cancel()
						if resp == nil {
							continue
						}
						restAnswered.Add(1)
						var r struct {
							Error struct {
								CorrelationID string `json:"correlation_id"`
							} `json:"error"`
						}
						if json.Unmarshal(b, &r) == nil && r.Error.CorrelationID != "" {
							answered.Store(r.Error.CorrelationID, true)
						} else if resp.StatusCode == http.StatusOK {
							restOK.Add(1)
						}
					case 5: // a client stalled in a body, now and then
						if (i/6)%4 != 0 {
							continue
						}
						c, err := net.Dial("tcp", host)
						if err != nil {
							continue
						}
						fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\n{", host)
						mu.Lock()
						slow = append(slow, c)
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		return slow
	}

	warm, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	for _, c := range load(warm) {
		c.Close()
	}
	cancel()
	time.Sleep(300 * time.Millisecond)
	before := r28bStat(t, pid)

	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	rotations := 0
	rotated := make(chan struct{})
	go func() {
		defer close(rotated)
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rotations++
			live := filepath.Join(dir, auditJSONL)
			if err := os.Rename(live, fmt.Sprintf("%s.%03d", live, rotations)); err != nil {
				t.Errorf("rotation %d: %v", rotations, err)
				return
			}
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Errorf("SIGHUP %d: %v", rotations, err)
				return
			}
		}
	}()
	slow := load(ctx)
	<-rotated
	during := r28bStat(t, pid)
	for _, c := range slow {
		c.Close()
	}
	after := during
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		after = r28bStat(t, pid)
		if after.fds <= before.fds+2 && !slices.ContainsFunc(after.files, func(f string) bool { return strings.Contains(f, auditJSONL+".") }) {
			break
		}
	}
	t.Logf("serve-http: %d rotations, %d REST answers (%d 200); fds %d -> %d (%d stalled) -> %d; threads %d -> %d -> %d; RSS %d -> %d -> %d KiB",
		rotations, restAnswered.Load(), restOK.Load(), before.fds, during.fds, len(slow), after.fds,
		before.threads, during.threads, after.threads, before.rssKiB, during.rssKiB, after.rssKiB)
	for _, f := range after.files {
		if strings.Contains(f, auditJSONL+".") {
			t.Errorf("a rotated audit file is still open: %s", f)
		}
	}
	if after.fds > before.fds+2 {
		t.Errorf("descriptors %d after the load, baseline %d: %v", after.fds, before.fds, after.files)
	}

	// Stop the server, so that both sinks have written everything.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("serve-http after SIGTERM: %v; stderr:\n%s", err, stderr)
		}
	case <-time.After(8 * time.Second):
		t.Fatalf("serve-http did not stop; stderr:\n%s", stderr)
	}
	ids, files := r28bJSONLIDs(t, dir)
	db, err := audit.OpenSQLite(filepath.Join(dir, auditSQLite))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT correlation_id FROM audit_log`)
	if err != nil {
		t.Fatal(err)
	}
	inDB := map[string]int{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		inDB[id]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records in %d JSONL files, %d in audit.db", len(ids), files, len(inDB))
	if files < 2 && rotations > 0 {
		t.Errorf("%d JSONL files after %d rotations", files, rotations)
	}
	for id, n := range inDB {
		if ids[id] != n {
			t.Errorf("record %s: %d in audit.db, %d in the JSONL files", id, n, ids[id])
		}
	}
	for id := range ids {
		if inDB[id] == 0 {
			t.Errorf("record %s: in the JSONL files, not in audit.db", id)
		}
	}
	answered.Range(func(k, _ any) bool {
		if ids[k.(string)] == 0 {
			t.Errorf("the REST refusal %s has no record in the JSONL files", k)
		}
		return true
	})
	if int64(len(inDB)) < restAnswered.Load() {
		t.Errorf("%d records, fewer than the %d REST calls answered", len(inDB), restAnswered.Load())
	}
}
