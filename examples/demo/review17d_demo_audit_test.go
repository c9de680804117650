package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// closingOutput is an output that a reader closes early, as `| head`
// does: the first write that contains stop, or that comes after the
// answers-th answer line ("    -> "), and every later one, fail with
// EPIPE.
type closingOutput struct {
	answers int
	stop    string
	buf     bytes.Buffer
	closed  bool
}

func (o *closingOutput) Write(p []byte) (int, error) {
	if !o.closed && (strings.Count(o.buf.String(), "    -> ") >= o.answers || (o.stop != "" && bytes.Contains(p, []byte(o.stop)))) {
		o.closed = true
	}
	if o.closed {
		return 0, syscall.EPIPE
	}
	return o.buf.Write(p)
}

// TestReview17dDemoStoppedKeepsItsRecords: a walkthrough stopped by its
// output (or a signal) returned without closing its audit sink, whose
// queue was not drained: the kept database (-audit) missed the outcome
// records of calls whose answers it had printed (1 answer shown and 0
// records, 6 and 5), and a refund that ran when the output failed while
// the human was asked could have its intent without its outcome. Now
// every call the walkthrough made is recorded before it returns.
func TestReview17dDemoStoppedKeepsItsRecords(t *testing.T) {
	type cut struct {
		name    string
		answers int
		stop    string
	}
	var cuts []cut
	// 10 answers: bob's refund declined; 11: ada's refunded, whose
	// outcome, queued when the output fails, must still be recorded.
	for k := 1; k <= 12; k++ {
		cuts = append(cuts, cut{name: fmt.Sprintf("after_answer_%d", k), answers: k})
	}
	// ada's human accepts while the output is gone: the demo stops before
	// its client sends the answer (the second round of the call), and
	// the refund does not run.
	cuts = append(cuts, cut{name: "while_ada_is_asked", answers: 1 << 30, stop: "late delivery"})
	for _, c := range cuts {
		t.Run(c.name, func(t *testing.T) {
			for rep := range 3 {
				path := filepath.Join(t.TempDir(), "audit.db")
				out := &closingOutput{answers: c.answers, stop: c.stop}
				var stderr bytes.Buffer
				if code := demo([]string{"-audit", path}, out, &stderr); code != 128+int(syscall.SIGPIPE) {
					t.Fatalf("run %d: exit %d, want 141; stderr:\n%s", rep, code, stderr.String())
				}
				db, err := audit.OpenSQLite(path)
				if err != nil {
					t.Fatal(err)
				}
				evs, err := audit.QuerySQL(t.Context(), db, audit.SQLite, audit.Filter{})
				db.Close()
				if err != nil {
					t.Fatal(err)
				}
				outcomes, intents, refunds := 0, 0, 0
				for _, e := range evs {
					switch {
					case e.Phase == audit.PhaseIntent:
						intents++
					case e.Phase == audit.PhaseOutcome:
						outcomes++
						if e.Tool == "trigger_refund" && e.Allowed && !e.DryRun {
							refunds++
						}
					}
				}
				shown := strings.Count(out.buf.String(), "    -> ")
				if outcomes < shown {
					t.Errorf("run %d: %d outcome records for %d answers shown; output:\n%s", rep, outcomes, shown, out.buf.String())
				}
				if intents != refunds {
					t.Errorf("run %d: %d refund intents, %d outcomes of an allowed refund; want one outcome per intent", rep, intents, refunds)
				}
				if stderr.Len() != 0 {
					t.Errorf("run %d: stderr %q, want nothing", rep, stderr.String())
				}
			}
		})
	}
}
