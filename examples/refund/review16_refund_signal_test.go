//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview16ShutdownDuringRefunds: a client pipes 300 refunds, each of
// its own amount, and the server is stopped while they run: by SIGTERM,
// by SIGINT, or by the end of its input. In every case each refund runs at
// most once, each one that started has its intent and its outcome in the
// audit file, each answer the client got is backed by them, and the
// server exits 0 without logging an error: a stop asked for is no failure.
// At end of input every refund is answered. After a signal every refund
// that ran is answered too (the stop is graceful: stdio.Options.Stop), one
// read after the signal is answered with -32004 and has no record, as it
// never ran, and one still unread when the last answer is out is neither
// run nor answered: the client reads end of file. (The signal used to end
// the session at once: "SIGTERM: 29 refunds ran, 1 answered".)
func TestReview16ShutdownDuringRefunds(t *testing.T) {
	const n = 300
	for _, stop := range []string{"SIGTERM", "SIGINT", "EOF"} {
		t.Run(stop, func(t *testing.T) {
			auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
			s := startRaw(t, []string{"-audit", auditPath, "-session-cap", "100000", "-user-cap", "100000"}, alice)
			s.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, true)
			var b strings.Builder
			b.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}` + "\n")
			for i := 1; i <= n; i++ {
				fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":%s,"reason":"refund under shutdown"}}}`+"\n", i, cents(i))
			}
			if _, err := io.WriteString(s.stdin, b.String()); err != nil {
				t.Fatal(err)
			}
			var lines []string
			select {
			case l, ok := <-s.lines: // refunds are running
				if !ok {
					t.Fatalf("no answer; stderr:\n%s", s.stderr)
				}
				lines = append(lines, l)
			case <-time.After(20 * time.Second):
				t.Fatalf("no answer; stderr:\n%s", s.stderr)
			}
			switch stop {
			case "SIGTERM":
				_ = s.cmd.Process.Signal(syscall.SIGTERM)
			case "SIGINT":
				_ = s.cmd.Process.Signal(syscall.SIGINT)
			default:
				s.stdin.Close()
			}
			timeout := time.After(60 * time.Second)
		read:
			for {
				select {
				case l, ok := <-s.lines:
					if !ok {
						break read
					}
					lines = append(lines, l)
				case <-timeout:
					t.Fatalf("the server did not end; stderr:\n%s", s.stderr)
				}
			}
			err := s.cmd.Wait()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Errorf("exit after %s: %v, want 0; stderr:\n%s", stop, err, s.stderr)
			}
			if strings.Contains(s.stderr.String(), "level=ERROR") {
				t.Errorf("after %s the log has an error:\n%s", stop, s.stderr)
			}

			// What the client was told was refunded, by amount, and the
			// refunds it was told were not started.
			answered := map[string]bool{}
			notStarted := map[string]bool{}
			for _, l := range lines {
				r := parseResponse(t, l)
				if r.Error != nil && r.Error.Code == -32004 && stop != "EOF" {
					var id int
					if err := json.Unmarshal(r.ID, &id); err != nil || id < 1 || id > n {
						t.Errorf("answer %s: -32004 to no refund", l)
						continue
					}
					amount, _ := strconv.ParseFloat(cents(id), 64)
					notStarted[fmt.Sprint(amount)] = true
					continue
				}
				var res struct {
					Structured struct {
						Status string  `json:"status"`
						Amount float64 `json:"amount"`
					} `json:"structuredContent"`
				}
				if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.Structured.Status != "processed" {
					t.Errorf("answer %s: want a processed refund", l)
					continue
				}
				answered[fmt.Sprint(res.Structured.Amount)] = true
			}
			intents := map[string]string{}  // correlation id -> amount
			outcomes := map[string]string{} // amount -> correlation id of a processed refund
			for _, e := range readAudit(t, auditPath, audit.Filter{Tool: "trigger_refund"}) {
				amount := fmt.Sprint(e.Args["amount"])
				switch {
				case e.Phase == audit.PhaseIntent:
					for id, a := range intents {
						if a == amount {
							t.Errorf("refund of %s has two intents (%s, %s): it ran twice", amount, id, e.CorrelationID)
						}
					}
					intents[e.CorrelationID] = amount
				case intents[e.CorrelationID] != amount:
					t.Errorf("outcome %+v has no intent before it", e)
				case !e.Allowed || fmt.Sprint(e.Cost) != amount:
					t.Errorf("outcome %+v: want the refund allowed and charged its amount", e)
				default:
					outcomes[amount] = e.CorrelationID
				}
			}
			for id, amount := range intents {
				if outcomes[amount] != id {
					t.Errorf("refund of %s (%s): intent without outcome", amount, id)
				}
			}
			for amount := range answered {
				if outcomes[amount] == "" {
					t.Errorf("the client was told a refund of %s was processed; the audit file has no record of it", amount)
				}
			}
			if stop == "EOF" && len(answered) != n {
				t.Errorf("end of input: %d refunds answered, want all %d", len(answered), n)
			}
			for amount := range outcomes {
				if !answered[amount] {
					t.Errorf("%s: the refund of %s ran and was not answered", stop, amount)
				}
			}
			for amount := range notStarted {
				for _, a := range intents {
					if a == amount {
						t.Errorf("%s: the refund of %s was answered as not started, and ran", stop, amount)
					}
				}
			}
			t.Logf("%s: %d refunds ran, %d answered, %d refused as not started", stop, len(outcomes), len(answered), len(notStarted))
		})
	}
}

// cents writes i cents as an amount: 1.05 for 105.
func cents(i int) string { return fmt.Sprintf("%d.%02d", i/100, i%100) }

// TestReview16HTTPShutdownDuringRefunds: SIGTERM to the HTTP mode while 60
// refunds are being posted: the server answers the requests it took
// (http.Server.Shutdown), each refund runs at most once, has its intent and
// outcome in the audit file, and every one the client was told of is in it.
func TestReview16HTTPShutdownDuringRefunds(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(bin, "-http", "127.0.0.1:0", "-audit", auditPath, "-session-cap", "100000", "-user-cap", "100000")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var logs syncBuffer
	urlc := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := stderr.Read(buf)
			logs.Write(buf[:n])
			if i := strings.Index(logs.String(), "url=http://"); i >= 0 {
				if j := strings.Index(logs.String()[i:], "/mcp"); j >= 0 {
					select {
					case urlc <- logs.String()[i+len("url=") : i+j]:
					default:
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
	var base string
	select {
	case base = <-urlc:
	case <-time.After(20 * time.Second):
		t.Fatalf("no address; stderr:\n%s", &logs)
	}
	const n = 60
	answers := make(chan string, n)
	for i := 1; i <= n; i++ {
		go func() {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":%s,"reason":"refund under shutdown"}}}`, i, cents(i))
			req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- ""
				return
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			answers <- string(b)
		}()
	}
	time.Sleep(20 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	answered := map[string]bool{}
	for range n {
		a := <-answers
		var r struct {
			Result struct {
				Structured struct {
					Status string  `json:"status"`
					Amount float64 `json:"amount"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(a), &r) == nil && r.Result.Structured.Status == "processed" {
			answered[fmt.Sprint(r.Result.Structured.Amount)] = true
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v; stderr:\n%s", err, &logs)
	}
	intents := map[string]string{}
	outcomes := map[string]string{}
	for _, e := range readAudit(t, auditPath, audit.Filter{Tool: "trigger_refund"}) {
		amount := fmt.Sprint(e.Args["amount"])
		if e.Phase == audit.PhaseIntent {
			for _, a := range intents {
				if a == amount {
					t.Errorf("refund of %s has two intents: it ran twice", amount)
				}
			}
			intents[e.CorrelationID] = amount
		} else if intents[e.CorrelationID] == amount && e.Allowed && fmt.Sprint(e.Cost) == amount {
			outcomes[amount] = e.CorrelationID
		} else {
			t.Errorf("outcome %+v: want an allowed refund charged its amount, after its intent", e)
		}
	}
	for id, amount := range intents {
		if outcomes[amount] != id {
			t.Errorf("refund of %s (%s): intent without outcome", amount, id)
		}
	}
	for amount := range answered {
		if outcomes[amount] == "" {
			t.Errorf("the client was told a refund of %s was processed; the audit file has no record of it", amount)
		}
	}
	t.Logf("%d refunds ran, %d answered", len(outcomes), len(answered))
}
