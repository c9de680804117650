package fastschema_test

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"testing"

	"github.com/mcpguard/mcpguard/internal/fastschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestLate14CountBoundIsTheInt: the refusal of a count keyword the
// validator cannot hold is at the bound of Go's int, exactly: the largest
// int (math.MaxInt64 is a common "no limit" in generated schemas) and the
// numbers just under it are kept, and enforced; the next one up, however
// written, is refused.
func TestLate14CountBoundIsTheInt(t *testing.T) {
	maxInt := strconv.Itoa(math.MaxInt)
	next := new(big.Int).Add(big.NewInt(math.MaxInt), big.NewInt(1)).String()
	on32 := strconv.IntSize == 32 // where int is 32 bits, 2^63-1 is beyond it
	for _, tc := range []struct {
		count string
		bad   bool
	}{
		{maxInt, false},
		{strconv.Itoa(math.MaxInt - 1), false},
		{strconv.Itoa(math.MaxInt - 511), false},
		{maxInt + ".0", false},
		{next, true},
		{next + ".0", true},
		{"9223372036854775807", on32},
		{"9223372036854775807e0", on32},
		{"0.9223372036854775807e19", on32},
		{"4294967297", on32},
		{"9223372036854775808", true},
		{"9223372036854775808.0", true},
		{"9.223372036854775808e18", true},
		{"18446744073709551621", true},
		{"1e19", true},
		{"1e400", true},
		{"5", false},
		{"0", false},
	} {
		for _, kw := range []string{"minItems", "maxLength"} {
			schema := `{"type":"array","` + kw + `":` + tc.count + `}`
			if kw == "maxLength" {
				schema = `{"type":"string","maxLength":` + tc.count + `}`
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(schema)))
			if err != nil {
				t.Fatal(err)
			}
			sch, err := fastschema.CompileReference(doc)
			if (err != nil) != tc.bad {
				t.Errorf("CompileReference(%s) = %v, want an error: %v", schema, err, tc.bad)
				continue
			}
			if err != nil {
				continue
			}
			// What is kept is enforced as written: a small instance is
			// refused by a huge minItems and passes a huge maxLength.
			var inst any = []any{1.0}
			if kw == "maxLength" {
				inst = "abc"
			}
			verr := sch.Validate(inst)
			if wantErr := (kw == "minItems") != (tc.count == "0"); (verr != nil) != wantErr {
				t.Errorf("%s: Validate(%v) = %v, want an error: %v", schema, inst, verr, wantErr)
			}
		}
	}
}
