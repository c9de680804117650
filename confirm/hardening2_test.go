package confirm

import (
	"testing"
	"time"
)

// TestDescribeNestedInvisibleChars: a string inside an array or object
// value holding characters cleaning would remove (U+200B) is shown escaped,
// so two different calls never read the same.
func TestDescribeNestedInvisibleChars(t *testing.T) {
	for _, tc := range []struct{ name, a, b string }{
		{"array", `{"targets":["db-1"]}`, `{"targets":["db-1\u200b"]}`},
		{"object", `{"opts":{"target":"db-1"}}`, `{"opts":{"target":"db-1\u200b"}}`},
		{"nested_key", `{"opts":{"target":"x"}}`, `{"opts":{"tar\u200bget":"x"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			da, db := Describe("wipe", []byte(tc.a)), Describe("wipe", []byte(tc.b))
			if da == db {
				t.Errorf("Describe(%s) == Describe(%s) == %q: the human cannot tell which is approved", tc.a, tc.b, da)
			}
		})
	}
}

// TestNonceHorizonAfterClockJump: one call whose clock read is far ahead
// (a clock without monotonic reading, such as time.Now().UTC() feeding
// Options.Now, stepped forward and back) must not make every later
// confirmation look like a replay.
func TestNonceHorizonAfterClockJump(t *testing.T) {
	ctx := t.Context()
	m := NewMemoryNonceStore()
	now := t0
	ahead := now.Add(24 * time.Hour)
	if first, err := m.Consume(ctx, "during-jump", ahead, ahead.Add(DefaultTTL)); err != nil || !first {
		t.Fatalf("Consume during the jump = %v, %v", first, err)
	}
	// The clock is back; a brand-new confirmation is made and used.
	now = now.Add(time.Second)
	first, err := m.Consume(ctx, "fresh", now, now.Add(DefaultTTL))
	if err != nil {
		t.Fatal(err)
	}
	if !first {
		t.Errorf("a fresh nonce, used once within its TTL, is refused as not first: one far-ahead clock read disabled every confirmation until the wall clock passes it")
	}
}
