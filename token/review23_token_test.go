package token_test

import (
	"context"
	"errors"
	"testing"
	"time"
)

// passedDeadline is a context at the instant its deadline has passed but
// its timer has not yet marked it done: Err is still nil.
type passedDeadline struct{ context.Context }

func (passedDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestReview23IntrospectorPassedDeadlineAsksNothing: a lookup whose
// deadline has passed, though its context's timer has not yet marked it
// done, is one whose context has ended: it fails (not judged, unwrapping
// to context.DeadlineExceeded) without starting a request nobody would
// wait for, as TestIntrospectorDoneContextAsksNothing has it for a context
// marked done. It started one, taking a MaxInFlight place for up to the
// timeout; a cached answer still serves it.
func TestReview23IntrospectorPassedDeadlineAsksNothing(t *testing.T) {
	e := newIntroEndpoint(t)
	i, log := newIntrospector(t, e, &clock{now: testNow}, nil)
	ctx := passedDeadline{context.Background()}
	_, _, err := i.Introspect(ctx, tokAnn)
	if err == nil {
		t.Fatal("err = nil, want a failed introspection")
	}
	checkIntroFailure(t, err, "deadline exceeded")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want one that unwraps to context.DeadlineExceeded", err)
	}
	if n := e.count(tokAnn); n != 0 {
		t.Errorf("the endpoint was asked %d times for a lookup whose deadline had passed", n)
	}
	if errs := log.all(); len(errs) != 0 {
		t.Errorf("failures reported: %v", errs)
	}
	if _, _, err := i.Introspect(context.Background(), tokAnn); err != nil {
		t.Fatal(err)
	}
	if pr, _, err := i.Introspect(ctx, tokAnn); err != nil || pr.Subject != "ann" {
		t.Errorf("a cached answer with a passed deadline: %v, %v", pr, err)
	}
}
