package token_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview22IntrospectionHugeNumbers: a number beyond float64's range
// (RFC 8259 sets none) leaves the answer one JSON object: in "exp" or
// "nbf" it is a refusal ("out of range", cached as refusals are), in a
// member the Introspector does not read it changes nothing. It was a
// failed introspection ("not a JSON object"), asked again at every lookup
// and reported each time, and a member such as a user's profile attribute
// could make every token of its holder fail.
func TestReview22IntrospectionHugeNumbers(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		refusal        string // "": accepted
	}{
		{"exp", `"exp":`, `"exp":1e400,"x_exp":`, "exp out of range"},
		{"nbf", `"nbf":`, `"nbf":-1e999,"x_nbf":`, "nbf out of range"},
		{"unread_member", `"x_note":`, `"x_big":1e400,"x_nested":{"n":[2e308]},"x_note":`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newIntroEndpoint(t)
			body := introAnswer(t, nil)
			if !strings.Contains(body, tc.from) {
				t.Fatalf("answer %s has no %s", body, tc.from)
			}
			e.answer(tokAnn, strings.Replace(body, tc.from, tc.to, 1))
			i, log := newIntrospector(t, e, &clock{now: testNow}, nil)
			for range 2 {
				pr, _, err := i.Introspect(context.Background(), tokAnn)
				if tc.refusal != "" {
					checkIntroRefusal(t, err, tc.refusal)
					continue
				}
				if err != nil {
					t.Fatalf("Introspect: %v", err)
				}
				want := &policy.Principal{Subject: "ann", Roles: []string{"admin", "support"}}
				if diff := cmp.Diff(want, pr); diff != "" {
					t.Errorf("principal (-want +got):\n%s", diff)
				}
			}
			if n := e.count(tokAnn); n != 1 {
				t.Errorf("the endpoint was asked %d times, want 1 (the answer cached)", n)
			}
			if errs := log.all(); len(errs) != 0 {
				t.Errorf("failures reported: %v", errs)
			}
		})
	}
}
