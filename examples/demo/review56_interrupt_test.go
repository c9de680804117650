package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// interruptingOutput passes its writes to out, and at the first that
// contains at stops the walkthrough as Ctrl-C does (its context
// cancelled with an [interrupted] cause), after that write.
type interruptingOutput struct {
	at     string
	stop   context.CancelCauseFunc
	mu     sync.Mutex
	out    strings.Builder
	cutLen int // len(out) when the walkthrough was stopped; -1 before
}

func (o *interruptingOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.out.Write(p)
	if o.cutLen < 0 && strings.Contains(string(p), o.at) {
		o.cutLen = o.out.Len()
		o.stop(interrupted{syscall.SIGINT})
	}
	return n, err
}

// printed returns what was written, and how much of it before the stop
// (-1: none).
func (o *interruptingOutput) printed() (string, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.out.String(), o.cutLen
}

// TestReview56InterruptedWalkthroughSaysSo: Ctrl-C in the middle of the
// walkthrough printed, for the call it cut short, "-> protocol error:
// context canceled" (there was no protocol error: the demo gave up the
// call), and then the headings of the sections it no longer ran, "Spend
// cap: a budget of 100.00 per user, ..." the last, with nothing under
// them. The call cut short now says that the demo was interrupted, and
// nothing follows it.
func TestReview56InterruptedWalkthroughSaysSo(t *testing.T) {
	for _, tc := range []struct{ name, at string }{
		{"at_a_label", "bob: no_such_tool"},                              // the call is not sent
		{"before_a_section", "ada: admin_reset_key"},                     // another section follows
		{"while_ada_is_asked", `reason=\"late delivery, goodwill\"" ->`}, // her human is asked
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			out := &interruptingOutput{at: tc.at, stop: cancel, cutLen: -1}
			err := walk(ctx, filepath.Join(t.TempDir(), "audit.db"), out)
			if !errors.As(err, new(interrupted)) {
				t.Fatalf("walk: %v, want the interruption", err)
			}
			got, cut := out.printed()
			if cut < 0 {
				t.Fatalf("the walkthrough never printed %q:\n%s", tc.at, got)
			}
			after := got[cut:]
			if strings.Contains(got, "protocol error: context canceled") {
				t.Errorf("the call the demo cut short is shown as a protocol error:\n%s", got)
			}
			if want := "    -> interrupted: the demo stopped before the answer came\n"; after != want {
				t.Errorf("printed after the interruption %q, want %q; output:\n%s", after, want, got)
			}
		})
	}
}
