package fastschema_test

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/fastschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestHugeCountRefused: v6 keeps only the low bits of a count keyword of
// 2^63 or more (maxLength 2^64+5 is enforced as 5, minItems 2^64+1 as 1:
// the second lets through what the schema forbids). Such a schema is
// refused at compile time, nested or not; bounds that fit are kept.
func TestHugeCountRefused(t *testing.T) {
	for _, tc := range []struct {
		schema string
		bad    bool
	}{
		{`{"type":"string","maxLength":18446744073709551621}`, true},
		{`{"type":"array","minItems":18446744073709551617}`, true},
		{`{"properties":{"a":{"items":{"maxItems":1e30}}}}`, true},
		{`{"type":"object","maxProperties":9223372036854775808}`, true},
		{`{"type":"string","maxLength":` + strconv.Itoa(math.MaxInt) + `}`, false},
		{`{"type":"string","maxLength":` + strconv.FormatUint(uint64(math.MaxInt)+1, 10) + `}`, true},
		{`{"type":"string","maxLength":5}`, false},
		{`{"properties":{"maxLength":{"type":"string"}}}`, false},
	} {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(tc.schema)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = fastschema.CompileReference(doc)
		if (err != nil) != tc.bad {
			t.Errorf("CompileReference(%s) = %v, want an error: %v", tc.schema, err, tc.bad)
		}
		if tc.bad && err != nil && !strings.Contains(err.Error(), "beyond") {
			t.Errorf("CompileReference(%s): %v, want it to say the count is too large", tc.schema, err)
		}
	}
}
