package limiter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// review24Spelling returns another spelling of tool, picked by seed: as
// given (other), in Go's upper or lower case, with a long s, a Kelvin
// sign, a Turkish capital I or a default-ignorable character in place of
// or next to one of its letters, or with a letter more.
func review24Spelling(tool, other string, seed uint) string {
	switch seed % 9 {
	case 0:
		return other
	case 1:
		return strings.ToUpper(tool)
	case 2:
		return strings.ToLower(tool)
	case 3:
		return strings.Replace(strings.Replace(tool, "s", "ſ", 1), "S", "ſ", 1)
	case 4:
		return strings.Replace(strings.Replace(tool, "k", "\u212a", 1), "K", "\u212a", 1)
	case 5:
		return strings.Replace(strings.Replace(tool, "i", "\u0130", 1), "I", "i\u0307", 1)
	case 6:
		at := int(seed/9) % (len(tool) + 1)
		return tool[:at] + "\u200b" + tool[at:]
	case 7:
		return tool + other
	}
	at := int(seed/9) % (len(tool) + 1)
	return tool[:at] + "\ufe0f" + tool[at:]
}

// review24Seeds adds to f tool names, each with every kind of spelling.
func review24Seeds(f *testing.F) {
	for _, tool := range []string{"search", "Search", "refund_order", "kill", "İptal", "straße", "a", "\u200b", "x\xff"} {
		for seed := range uint(18) {
			f.Add(tool, "SEARCH", seed)
		}
	}
}

// FuzzReview24ToolLimitSpellings: a limit for one tool limits every
// spelling whose policy.NameKey is the tool's, and no other: a call of the
// spelling after the tool's one call is denied exactly then.
func FuzzReview24ToolLimitSpellings(f *testing.F) {
	review24Seeds(f)
	now := time.Unix(1e9, 0)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, tool, other string, seed uint) {
		if tool == "" {
			t.Skip("a limit for every tool")
		}
		if strings.Contains(tool, "*") {
			t.Skip("New refuses a limit for a tool with a \"*\"")
		}
		spelling := review24Spelling(tool, other, seed)
		same := policy.NameKey(spelling) == policy.NameKey(tool)
		rate := []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Global, Tool: tool, Max: 1, Window: time.Hour}}
		l, err := limiter.New(rate, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := l.AllowAt(ctx, now, limiter.Request{Tool: tool, Calls: 1}); !d.Allowed {
			t.Fatalf("%q: the first call denied: %+v", tool, d)
		}
		d := l.AllowAt(ctx, now, limiter.Request{Tool: spelling, Calls: 1})
		if d.Allowed == same {
			t.Fatalf("limit for %q (key %q), call of %q (key %q): allowed %v", tool, policy.NameKey(tool), spelling, policy.NameKey(spelling), d.Allowed)
		}
	})
}

// FuzzReview24ToolRefundSpellings: a call of a spelling of a tool, which
// the tool's limits applied to, is refunded from them as the tool's own
// call is: refunded at once, it leaves the tool's budget whole (Refund
// gives back to the limits that applied); and Kept counts a Spend limit of
// the tool for a spelling's cost exactly when the limit applied to it.
// The seeds spell the tool as it is; testdata/fuzz holds a failing input
// (the in-memory Refund and Kept compared a limit's Tool with the called
// name exactly).
func FuzzReview24ToolRefundSpellings(f *testing.F) {
	for _, tool := range []string{"search", "İptal", "x\xff"} {
		f.Add(tool, tool, uint(0))
	}
	now := time.Unix(1e9, 0)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, tool, other string, seed uint) {
		if tool == "" {
			t.Skip("a limit for every tool")
		}
		if strings.Contains(tool, "*") {
			t.Skip("New refuses a limit for a tool with a \"*\"")
		}
		spelling := review24Spelling(tool, other, seed)
		same := policy.NameKey(spelling) == policy.NameKey(tool)

		// A refunded call of a spelling takes nothing from the tool's
		// budget.
		rate := []limiter.Limit{{Kind: limiter.Rate, Scope: limiter.Global, Tool: tool, Max: 1, Window: time.Hour}}
		l, err := limiter.New(rate, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := l.AllowAt(ctx, now, limiter.Request{Tool: spelling, Calls: 1})
		if !d.Allowed {
			t.Fatalf("%q: the first call denied: %+v", spelling, d)
		}
		if err := l.Refund(ctx, now, d); err != nil {
			t.Fatal(err)
		}
		if d := l.AllowAt(ctx, now, limiter.Request{Tool: tool, Calls: 1}); !d.Allowed {
			t.Errorf("limit for %q: a call of %q refunded at once, then %q denied (same key: %v)", tool, spelling, tool, same)
		}

		// Kept: half the increment elapsed keeps half the cost of a call
		// the tool's Spend limit applied to.
		spend := []limiter.Limit{{Kind: limiter.Spend, Scope: limiter.Global, Tool: tool, Max: 10, Window: time.Hour}}
		l, _ = limiter.New(spend, nil)
		d = l.AllowAt(ctx, now, limiter.Request{Tool: spelling, Cost: 10})
		if !d.Allowed {
			t.Fatalf("%q: the first call denied: %+v", spelling, d)
		}
		want := 0.0
		if same {
			want = 0.5
		}
		if got := l.Kept(now.Add(30*time.Minute), d); got != want {
			t.Errorf("limit for %q, call of %q costing the limit's max: Kept half a window later = %v, want %v", tool, spelling, got, want)
		}
	})
}
