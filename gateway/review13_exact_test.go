package gateway

import (
	"net/http"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestArgLimitExactAtTheLimit: a number just above an argument limit that
// rounds to the limit as a float64 is refused and never reaches the
// downstream, as the Guard refuses it; numbers at or below the limit, in
// any spelling, pass.
func TestArgLimitExactAtTheLimit(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "trigger_refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}, {Field: "seats", Max: 1 << 53}}}}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, &Options{Policy: pol})
	for _, tc := range []struct {
		args   string
		status int
	}{
		{`{"amount":100.000000000000001,"seats":1}`, http.StatusForbidden},
		{`{"amount":1.00000000000000001e2,"seats":1}`, http.StatusForbidden},
		{`{"amount":5,"seats":9007199254740993}`, http.StatusForbidden},
		{`{"amount":100,"seats":9007199254740992}`, http.StatusOK},
		{`{"amount":100.000,"seats":1}`, http.StatusOK},
		{`{"amount":1e2,"seats":1}`, http.StatusOK},
		{`{"amount":99.99999999999999999,"seats":1}`, http.StatusOK},
	} {
		before := len(rg.down.log())
		got := rg.post(t, viewer, call(`1`, "trigger_refund", tc.args))
		if got.status != tc.status {
			t.Errorf("arguments %s: status %d, want %d: %s", tc.args, got.status, tc.status, got.body)
		}
		if reached := len(rg.down.log()) > before; reached != (tc.status == http.StatusOK) {
			t.Errorf("arguments %s: reached the downstream: %v", tc.args, reached)
		}
	}
}
