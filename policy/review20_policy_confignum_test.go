package policy_test

import (
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview20ParseConfigLongNumbers: a rule file's numbers are read as
// their nearest float64 even past 800 digits, where strconv.ParseFloat
// misreads them ("1", 1000 zeros, "e-990" is 1e10, not 1e-191), and one
// beyond the float64 range is refused however it is written.
func TestReview20ParseConfigLongNumbers(t *testing.T) {
	zeros := strings.Repeat("0", 1000)
	doc := `{"tools":[{"name":"t","class":"read","cost":1` + zeros + `e-999,"arg_limits":[{"field":"f","max":1` + zeros + `e-990}]}]}`
	cfg, err := policy.ParseConfig([]byte(doc))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if got := cfg.Tools[0].ArgLimits[0].Max; got != 1e10 {
		t.Errorf(`"max": 1<1000 zeros>e-990 read as %v, want 1e10`, got)
	}
	if got := cfg.Tools[0].Cost; got != 10 {
		t.Errorf(`"cost": 1<1000 zeros>e-999 read as %v, want 10`, got)
	}
	doc = `{"tools":[{"name":"t","class":"read","cost":1` + zeros + `e-500}]}`
	if _, err := policy.ParseConfig([]byte(doc)); err == nil || !strings.Contains(err.Error(), "tools[0].cost") {
		t.Errorf(`"cost": 1<1000 zeros>e-500 (1e500): error %v, want one naming tools[0].cost`, err)
	}
}
