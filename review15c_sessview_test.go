package mcpguard

import (
	"runtime"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview15cSessionViewsSemantics: sessionViews[V] (5ef3e1a) replaced
// two tables, the tools' views and the resources' resViews, that differed
// in one flag: a resources view told whether it was shown anything
// (listed), a tools view had a nil base instead. Step by step, the
// behaviours both had: no view before seen; seen names the caller, shown
// nothing yet; a show answers what was shown before and whether anything
// was; a stale read (an older sequence number) never replaces a newer
// one; touch changes the caller of a view only, with its own copy of the
// roles; drop turns a view off (no caller, no principal, no show, touch
// does not revive it); seen after drop starts afresh.
func TestReview15cSessionViewsSemantics(t *testing.T) {
	var vs sessionViews[string]
	ss := &mcp.ServerSession{}
	alice := &policy.Principal{Subject: "alice", Roles: []string{"admin"}}
	type state struct {
		Caller      string
		CallerOK    bool
		PrincipalOK bool
		Shown       bool
	}
	at := func(step string, want state) {
		t.Helper()
		pr, ok := vs.caller(ss)
		pp, _, shown, pok := vs.principal(ss)
		if ok != pok || pr.Subject != pp.Subject {
			t.Errorf("%s: caller %v/%t and principal %v/%t disagree", step, pr, ok, pp, pok)
		}
		got := state{pr.Subject, ok, pok, shown}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", step, diff)
		}
	}
	show := func(step string, seq uint64, val, wantBefore string, wantHad, wantOK bool) {
		t.Helper()
		before, had, ok := vs.show(ss, seq, val)
		if before != wantBefore || had != wantHad || ok != wantOK {
			t.Errorf("%s: show(%d, %q) = %q, %t, %t; want %q, %t, %t", step, seq, val, before, had, ok, wantBefore, wantHad, wantOK)
		}
	}

	at("no_view", state{})
	show("no_view", 1, "x", "", false, false)
	vs.touch(ss, alice)
	vs.drop(ss)
	at("touch_and_drop_make_no_view", state{})

	seq := vs.seen(ss, alice)
	alice.Roles[0] = "mutated" // the view keeps its own copy
	at("seen", state{Caller: "alice", CallerOK: true, PrincipalOK: true})
	show("first_show", seq, "A", "", false, true)
	at("shown", state{Caller: "alice", CallerOK: true, PrincipalOK: true, Shown: true})

	_, older, _, _ := vs.principal(ss)
	_, newer, _, _ := vs.principal(ss)
	show("newer_read", newer, "B", "A", true, true)
	show("stale_read", older, "C", "B", true, true)
	show("stale_read_kept_newer", newer, "B", "B", true, true)
	if pr, _ := vs.caller(ss); !cmp.Equal(pr.Roles, []string{"admin"}) {
		t.Errorf("the view's roles %v, want its own copy [admin]", pr.Roles)
	}

	vs.touch(ss, &policy.Principal{Subject: "bob"})
	at("touch", state{Caller: "bob", CallerOK: true, PrincipalOK: true, Shown: true})

	vs.drop(ss)
	at("drop", state{})
	show("show_after_drop", ^uint64(0), "D", "", false, false)
	vs.touch(ss, alice)
	at("touch_after_drop", state{})

	seq = vs.seen(ss, &policy.Principal{Subject: "carol"})
	at("seen_after_drop", state{Caller: "carol", CallerOK: true, PrincipalOK: true})
	show("show_after_seen_again", seq, "E", "", false, true)

	if a, b := vs.seen(nil, alice), vs.seen(nil, alice); b <= a {
		t.Errorf("seen(nil) gave %d then %d, want increasing sequence numbers", a, b)
	}
	if _, _, ok := vs.show(nil, ^uint64(0), "F"); ok {
		t.Error("show(nil) = ok, want no view")
	}
	runtime.KeepAlive(ss)
}

// TestReview15cSessionViewsConcurrent: many sessions at once, each seen,
// shown, touched, read and dropped by several goroutines, some sessions
// let go mid-way (their cleanups delete views while others are in use).
// Run with -race; each session's view must end as its last writes left it.
func TestReview15cSessionViewsConcurrent(t *testing.T) {
	var vs sessionViews[int]
	const sessions, rounds = 64, 50
	kept := make([]*mcp.ServerSession, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		ss := &mcp.ServerSession{}
		kept[i] = ss
		for w := range 3 {
			wg.Go(func() {
				pr := &policy.Principal{Subject: "u", Roles: []string{string(rune('a' + w))}}
				for r := range rounds {
					seq := vs.seen(ss, pr)
					vs.show(ss, seq, r)
					vs.touch(ss, pr)
					if _, s, _, ok := vs.principal(ss); ok {
						vs.show(ss, s, r)
					}
					if r%7 == w {
						vs.drop(ss)
					}
					vs.caller(ss)
				}
			})
		}
		if i%2 == 1 {
			wg.Go(func() { // a short-lived session of its own
				tmp := &mcp.ServerSession{}
				vs.show(tmp, vs.seen(tmp, &policy.Principal{Subject: "tmp"}), 1)
			})
		}
	}
	wg.Wait()
	for i, ss := range kept {
		seq := vs.seen(ss, &policy.Principal{Subject: "last"})
		if before, _, ok := vs.show(ss, seq, -1); !ok {
			t.Errorf("session %d: no view after seen", i)
		} else if _, _, ok := vs.show(ss, seq, -2); !ok {
			t.Errorf("session %d: view gone", i)
		} else if got, _, _ := vs.show(ss, seq, -3); got != -1 {
			t.Errorf("session %d: shown %d after a show of -1 at the newest sequence number (before: %d)", i, got, before)
		}
		if pr, ok := vs.caller(ss); !ok || pr.Subject != "last" {
			t.Errorf("session %d: caller %v, %t; want last", i, pr, ok)
		}
	}
	runtime.KeepAlive(kept)
}
