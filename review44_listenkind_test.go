package mcpguard_test

import (
	"sync"
	"testing"
	"time"
)

// TestReview44ListenOfOneKindAcknowledgedAfterCheck is
// TestReview32bListenAcknowledgedAfterCheck for a listen for the tools'
// changes only, and one for the resources' changes only: its session is
// told of the policy whose check passed it by, of the kind it listens for
// and of no other, whatever its view of the other kind.
func TestReview44ListenOfOneKindAcknowledgedAfterCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lists lcLists
	}{
		{"tools", lcListTools},
		{"resources", lcListRes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pu, pa := rnPolicy(t, "user"), rnPolicy(t, "admin")
			b := &rn2Below{}
			r := newRN2Rig(t, "2025-11-25", pu, true, b)
			sentinel := r.connect(bob, lcListRes|lcListTools)
			gate := make(chan chan struct{})
			b.mu.Lock()
			b.listenGate = gate
			b.mu.Unlock()

			s := r.dial(bob, "", tc.lists)
			var release chan struct{}
			select {
			case release = <-gate:
			case <-time.After(5 * time.Second):
				t.Fatal("no listen came")
			}
			var once sync.Once
			open := func() { once.Do(func() { close(release) }) }
			defer open() // a failed wait leaves no listen held: the session's Close would wait for it

			r.setPolicy(pa)
			waitFor(t, func() bool { return sentinel.toolsHeard.Load() >= 1 && sentinel.resHeard.Load() >= 1 })
			open()
			waitFor(t, func() bool { return r.w.ackedOn(s.ss) })
			wantTools, wantRes := int64(0), int64(0)
			if tc.lists&lcListTools != 0 {
				wantTools = 1
			} else {
				wantRes = 1
			}
			deadline := time.Now().Add(3 * time.Second)
			for (s.toolsHeard.Load() < wantTools || s.resHeard.Load() < wantRes) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if s.toolsHeard.Load() != wantTools || s.resHeard.Load() != wantRes {
				t.Errorf("the listening client heard %d tools/list_changed and %d resources/list_changed, want %d and %d",
					s.toolsHeard.Load(), s.resHeard.Load(), wantTools, wantRes)
			}
		})
	}
}
