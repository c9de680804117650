package fastschema

import (
	"testing"
)

// FuzzDifferential checks, for the refund and the nested note schemas,
// that the fast verdict equals the reference pipeline's and that nothing
// panics.
func FuzzDifferential(f *testing.F) {
	for _, in := range handInputs {
		f.Add([]byte(in))
	}
	for _, seed := range seedDocs {
		for _, m := range seed {
			f.Add([]byte(`{"` + m[0] + `":` + m[1] + `}`))
		}
	}
	for _, v := range valuePool {
		f.Add([]byte(`{"amount":` + v + `,"customer_id":"CUST-00001","reason":"damaged on arrival"}`))
		f.Add([]byte(`{"title":"t","meta":{"due":` + v + `,"priority":` + v + `},"tags":[` + v + `]}`))
	}
	type pair struct {
		fast *Schema
		o    *oracle
	}
	var pairs []pair
	for _, src := range []string{refundSchema, noteSchema, openSchema, intSchema, enumSchema, unicodeSchema} {
		fast, ok := Compile(decodeSchema(f, src), testOpts)
		if !ok {
			f.Fatal("Compile refused")
		}
		pairs = append(pairs, pair{fast, newOracle(f, decodeSchema(f, src), testOpts)})
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, p := range pairs {
			agree(t, p.fast, p.o, raw)
		}
	})
}

// FuzzFormats checks each reimplemented format against v6's own function.
func FuzzFormats(f *testing.F) {
	for _, s := range formatProbes {
		f.Add(s)
	}
	checks := v6Formats(f)
	f.Fuzz(func(t *testing.T, s string) {
		for name, v6 := range checks {
			want := v6(s) == nil
			if got := builtinFormat(name)([]byte(s)); got != want {
				t.Fatalf("format %s of %q: fast %v, v6 %v", name, s, got, want)
			}
		}
	})
}
