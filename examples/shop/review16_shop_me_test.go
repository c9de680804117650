package main

import (
	"context"
	"strings"
	"testing"
)

// TestReview16SessionCheckAnswerStrict: the answer of GET /api/auth/me
// names the user (the audit subject, the key of the per-user rate) and the
// roles (which tools are listed and callable). Tool answers with a key
// twice or trailing data are refused as malformed, but this one was read
// leniently, the last key winning: an answer pasted together from a
// user-controlled field ({"user":{"id":"u-1001",...},"user":{"id":"u-3001",
// "roles":["super_admin"]}}) made ada u-3001, a super admin, listing the
// admin tools and spending linus's rate. A session check whose answer is
// not exactly one JSON value without repeated keys now refuses the
// session, as any unexpected answer does.
func TestReview16SessionCheckAnswerStrict(t *testing.T) {
	st := newStack(t, nil, nil)
	ada := connect(t, st, sessionCustomer, nil)
	for _, tc := range []struct{ name, body string }{
		{"user_twice", `{"user":{"id":"u-1001","roles":["customer"]},"user":{"id":"u-3001","roles":["super_admin"]}}`},
		{"id_twice", `{"user":{"id":"u-1001","roles":["customer"],"id":"u-3001"}}`},
		{"roles_twice", `{"user":{"id":"u-1001","roles":["customer"],"roles":["super_admin"]}}`},
		// encoding/json matches struct fields in any letter case.
		{"user_other_case", `{"user":{"id":"u-1001","roles":["customer"]},"User":{"id":"u-3001","roles":["super_admin"]}}`},
		{"roles_other_case", `{"user":{"id":"u-1001","roles":["customer"],"ROLES":["super_admin"]}}`},
		{"trailing_value", `{"user":{"id":"u-1001","roles":["customer"]}}{"user":{"id":"u-3001","roles":["super_admin"]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st.gw.fail("GET", "/api/auth/me", 200, tc.body, 1)
			res, err := ada.ListTools(context.Background(), nil)
			if err == nil {
				var names []string
				for _, tool := range res.Tools {
					names = append(names, tool.Name)
				}
				t.Fatalf("tools/list with the session check answering %s: listed %v, want refused", tc.body, names)
			}
			if !strings.Contains(err.Error(), "answered unexpectedly") {
				t.Errorf("tools/list with the session check answering %s: %v, want the session refused", tc.body, err)
			}
		})
	}
	if got := toolNames(t, ada); len(got) != 8 {
		t.Errorf("ada after: %v", got)
	}
}
