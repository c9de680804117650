package fastschema_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/fastschema"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// review15Literals are number literals where a validator could part from
// exact arithmetic on the literal: float64 overflow and underflow, integers
// beyond 2^53, spellings of one value, and the root's bound of 128
// characters and an exponent of ±400 on either side of it.
var review15Literals = []string{
	"0", "-0", "0.0", "-0.0", "0e5", "-0.0e-5", "1", "1.0", "-1.0", "1.5", "1e0", "1E0", "10e-1", "0.1", "0.3",
	"1e400", "1E400", "1E+400", "1e00400", "1e+0000400", "-1e400", "1e-400", "1E-400", "-1e-400", "0e400", "0.0e-400",
	"1e401", "1E401", "1e+401", "1e-401", "-1e401", "1e0401", "0e401", "0.0e-401", "1e1000001", "0e99999999999999999999",
	"123456789012345678901234567890", "123456789012345678901234567891", "-123456789012345678901234567890",
	"9007199254740992", "9007199254740993", "1.7976931348623157e308", "1.8e308", "-1.8e308", "4.9e-324", "2e-324",
	"1" + strings.Repeat("0", 127), // 128 characters: 10^127
	"1" + strings.Repeat("0", 128), // 129
	"-" + strings.Repeat("9", 127), // 128
	"-" + strings.Repeat("9", 128), // 129
	"0." + strings.Repeat("0", 125) + "1",
	"0." + strings.Repeat("0", 126) + "1",
	"1." + strings.Repeat("0", 120) + "e400",  // 127
	"1." + strings.Repeat("0", 122) + "e400",  // 129
	"1." + strings.Repeat("0", 121) + "e-400", // 129
}

// review15Schemas put one keyword on the property "n" (closed, so that
// strict mode changes nothing). multipleOf is outside the fast subset.
var review15Schemas = []string{
	`{}`, `{"type":"integer"}`, `{"type":"number"}`, `{"type":"string"}`, `{"type":["integer","null"]}`,
	`{"minimum":0}`, `{"maximum":0}`, `{"exclusiveMinimum":0}`, `{"exclusiveMaximum":0}`, `{"exclusiveMinimum":-0.0}`,
	`{"maximum":1e308}`, `{"minimum":9007199254740993}`, `{"maximum":123456789012345678901234567890}`,
	`{"exclusiveMaximum":1e400}`, `{"minimum":1e-400}`, `{"maximum":1e500}`, `{"minimum":-1e-401}`,
	`{"type":"integer","exclusiveMaximum":1e128}`, `{"type":"integer","minimum":1e127}`,
	`{"enum":[0,1,9007199254740992,1e400,123456789012345678901234567890]}`, `{"enum":[1e401,1e1000001,"1e401"]}`,
	`{"const":9007199254740993}`, `{"const":0}`, `{"const":1e-400}`, `{"const":1e127}`,
	`{"multipleOf":1}`, `{"multipleOf":0.1}`, `{"type":"integer","multipleOf":3}`, `{"multipleOf":1e-400}`,
}

// review15Root compiles src on both paths: the fast path (nil when Compile
// refuses it) and mcpguard's Validator, whose Validate always runs the
// reference pipeline (decoding with UseNumber, the root's checks, v6).
func review15Root(t *testing.T, src string) (*fastschema.Schema, *mcpguard.Validator) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	fast, _ := fastschema.Compile(doc, fastschema.Options{MaxStringBytes: 65536})
	v, err := mcpguard.NewValidator(json.RawMessage(src), nil)
	if err != nil {
		t.Fatalf("NewValidator(%s): %v", src, err)
	}
	return fast, v
}

// TestReview15NumberLiteralsBothPaths runs every literal, as a property
// value and inside an array under an open schema, through both paths and
// requires the same verdict; where the reference refuses a literal for the
// root's number bound, the fast path must say so in the same words.
func TestReview15NumberLiteralsBothPaths(t *testing.T) {
	fastRan, bounded := 0, 0
	for _, kw := range review15Schemas {
		src := `{"type":"object","properties":{"n":` + kw + `,"any":{"type":"array"}},"additionalProperties":false}`
		fast, v := review15Root(t, src)
		if strings.Contains(kw, "multipleOf") != (fast == nil) {
			t.Fatalf("fastschema.Compile(%s) ok = %v", src, fast != nil)
		}
		if fast == nil {
			continue // only the reference runs; its verdicts are pinned below
		}
		for _, lit := range review15Literals {
			for _, in := range []string{`{"n":` + lit + `}`, `{"any":[true,` + lit + `]}`} {
				got := fast.Validate([]byte(in))
				_, want := v.Validate([]byte(in))
				if (got == nil) != (want == nil) {
					t.Fatalf("schema %s:\nfast Validate(%.60s) = %v\nreference Validate = %v", src, in, got, want)
				}
				fastRan++
				var de *mcpguard.DenialError
				if want == nil || !strings.Contains(want.Error(), "is a number of more than") || !errors.As(want, &de) {
					continue
				}
				bounded++
				if got.Message != de.Message || got.Pointer != de.Details["field"] {
					t.Errorf("schema %s, input %.60s:\nfast says %q at %q\nreference %q at %v", src, in, got.Message, got.Pointer, de.Message, de.Details["field"])
				}
			}
		}
	}
	if fastRan < 2000 || bounded < 500 {
		t.Errorf("only %d documents compared, %d of them refused for the number bound", fastRan, bounded)
	}
}

// TestReview15NumberVerdicts pins the reference verdict (and the fast one,
// where the schema is in the subset) on the cases the brief names, so that
// two paths agreeing on a wrong answer cannot pass.
func TestReview15NumberVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name, kw, lit string
		valid         bool
	}{
		{"exponent_400_is_in", `{}`, "1E400", true},
		{"exponent_plus_0400_is_in", `{}`, "1e+0000400", true},
		{"exponent_401_is_out", `{}`, "1e401", false},
		{"exponent_minus_401_is_out", `{}`, "1e-401", false},
		{"zero_exponent_401_is_out", `{}`, "0e401", false},
		{"exponent_beyond_big_rat_is_out", `{"type":"number"}`, "1e1000001", false},
		{"length_128_is_in", `{}`, "1" + strings.Repeat("0", 127), true},
		{"length_129_is_out", `{}`, "1" + strings.Repeat("0", 128), false},
		{"negative_length_129_is_out", `{"type":"number"}`, "-" + strings.Repeat("9", 128), false},
		{"bound_before_type", `{"type":"string"}`, "1e401", false},
		{"no_float64_overflow", `{"type":"number"}`, "1.8e308", true},
		{"overflow_above_max", `{"maximum":1e308}`, "1.8e308", false},
		{"no_float64_underflow", `{"exclusiveMinimum":0}`, "2e-324", true},
		{"1e-400_is_not_zero", `{"maximum":0}`, "1e-400", false},
		{"1e-400_is_not_const_0", `{"const":0}`, "1e-400", false},
		{"minus_0_is_0", `{"exclusiveMaximum":0}`, "-0", false},
		{"minus_0_const_0", `{"const":0}`, "-0.0e-5", true},
		{"1.0_is_integer", `{"type":"integer"}`, "1.0", true},
		{"1e400_is_integer", `{"type":"integer"}`, "1e400", true},
		{"1e-400_is_not_integer", `{"type":"integer"}`, "1e-400", false},
		{"2^53+1_exact", `{"const":9007199254740993}`, "9007199254740993", true},
		{"2^53_is_not_2^53+1", `{"const":9007199254740993}`, "9007199254740992", false},
		{"huge_integer_above_max", `{"maximum":123456789012345678901234567890}`, "123456789012345678901234567891", false},
		{"10^127_below_1e128", `{"type":"integer","exclusiveMaximum":1e128}`, "1" + strings.Repeat("0", 127), true},
		{"enum_never_holds_1e401", `{"enum":[1e401,1e1000001,"1e401"]}`, "1e401", false},
		{"multiple_of_0.1_exact", `{"multipleOf":0.1}`, "0.3", true},
		{"multiple_of_3_huge", `{"type":"integer","multipleOf":3}`, "1" + strings.Repeat("0", 127), false},
		{"multiple_of_3_exponent_401", `{"type":"integer","multipleOf":3}`, "3e401", false},
		{"multiple_of_tiny", `{"multipleOf":1e-400}`, "1e-399", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `{"type":"object","properties":{"n":` + tc.kw + `},"additionalProperties":false}`
			fast, v := review15Root(t, src)
			in := []byte(`{"n":` + tc.lit + `}`)
			if _, err := v.Validate(in); (err == nil) != tc.valid {
				t.Errorf("reference Validate(%.60s) = %v, want valid=%v", in, err, tc.valid)
			}
			if fast == nil {
				return
			}
			if e := fast.Validate(in); (e == nil) != tc.valid {
				t.Errorf("fast Validate(%.60s) = %v, want valid=%v", in, e, tc.valid)
			}
		})
	}
}

// TestReview15LongLiteralCost: a megabyte of digits costs both paths time
// linear in its length, refused before any arithmetic. Timing is noisy on
// a shared machine, so the test fails only when the cost is both
// superlinear (16 times the digits taking more than 64 times as long:
// linear is 16, and v6's exact arithmetic on an unbounded literal, 64 KiB
// against 1 MiB, measured over 100) and noticeable (over 100ms).
func TestReview15LongLiteralCost(t *testing.T) {
	// n is in the fast subset; m (multipleOf) sends the whole schema to
	// the reference validator.
	fast, _ := review15Root(t, `{"type":"object","properties":{"n":{"type":"integer","minimum":0,"enum":[1,2,3]}}}`)
	_, ref := review15Root(t, `{"type":"object","properties":{"n":{"type":"integer","minimum":0,"enum":[1,2,3]},"m":{"multipleOf":3}}}`)
	if fast == nil {
		t.Fatal("Compile refused")
	}
	for _, tc := range []struct {
		name, key string
		check     func([]byte) error
	}{
		{"fast", "n", func(in []byte) error {
			if e := fast.Validate(in); e != nil {
				return e
			}
			return nil
		}},
		{"reference_bounds", "n", func(in []byte) error { _, err := ref.Validate(in); return err }},
		{"reference_multiple_of", "m", func(in []byte) error { _, err := ref.Validate(in); return err }},
	} {
		cost := func(digits int) time.Duration {
			in := []byte(`{"` + tc.key + `":1` + strings.Repeat("7", digits-1) + `}`)
			best := time.Duration(math.MaxInt64)
			for range 3 {
				// Its work (the CPU time of its thread on Linux), not
				// its wall time: 1 MiB waits for a CPU more often than
				// 64 KiB on a busy machine.
				var err error
				best = min(best, testsvc.WorkTime(func() { err = tc.check(in) }))
				if err == nil || !strings.Contains(err.Error(), "is a number of more than 128 characters") {
					t.Fatalf("%s: a literal of %d digits: %v, want the number bound", tc.name, digits, err)
				}
			}
			return best
		}
		small, big := cost(64<<10), cost(1<<20)
		if big > 100*time.Millisecond && big > 64*small {
			t.Errorf("%s: 64 KiB of digits took %v, 1 MiB %v: superlinear", tc.name, small, big)
		}
	}
}
