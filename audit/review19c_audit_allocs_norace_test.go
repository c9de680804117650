//go:build !race

// Allocation counts are only meaningful without the race detector.

package audit

import (
	"encoding/json"
	"testing"
)

// TestReview19cCanonicalAllocs: keeping lone surrogates' escapes costs
// nothing to text without one. The counts are those measured on the
// canonical form before lone surrogates were kept (ce42b78^): none for
// text without escapes; for a string with escapes, its decoded copy (a
// value's grows once or twice), and one buffer for the decoded keys.
func TestReview19cCanonicalAllocs(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want float64
	}{
		{`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged","tags":["a","b"],"x":{"y":null}}`, 0},
		{`{"note":"caf\u00e9 \"x\"\n","n":1}`, 2},
		{`{"n\u00e9":1,"\u0041":{"\/":2},"z":true}`, 1},
		{`{"k\u00e9":"\ud83c\udf89","b":["\u00e9","\t"]}`, 4},
		{"{\"\xff\":\"\xfe\",\"\\ufffd\":1}", 1},
	} {
		raw := json.RawMessage(tc.raw)
		buf := make([]byte, 0, 4096)
		if got := testing.AllocsPerRun(100, func() { AppendArgsSHA256(buf, raw) }); got != tc.want {
			t.Errorf("AppendArgsSHA256(%s) allocates %v times, want %v", tc.raw, got, tc.want)
		}
	}
}
