//go:build !race

// Allocation counts are only meaningful without the race detector (under it
// sync.Pool drops entries at random), so this file is not built with -race:
// nothing skips.

package fastschema

import "testing"

func TestValidateDoesNotAllocate(t *testing.T) {
	tests := []struct{ name, schema, in string }{
		{"refund", refundSchema, `{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged on arrival"}`},
		{"refund_escaped", refundSchema, `{"customer_id":"\u0043UST-00001","amount":1e2,"reason":"d\u00e9g\u00e2ts \ud83d\ude00 ok"}`},
		{"note", noteSchema, `{"title":"t","meta":{"due":"2024-02-29","at":"2024-02-29T12:00:00+05:30","priority":2},"tags":["2024-01-01"]}`},
		{"enum", enumSchema, `{"status":"\u00e9","level":3.50,"mode":"dry","n":null}`},
		{"int", intSchema, `{"count":100,"offset":999,"big":123456789012345678901234567890,"tiny":-1e-21}`},
		{"many_keys", openSchema, `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"\u0072":18}`},
		{"empty", refundSchema[:0] + openSchema, ``},
		{"formats", formatSchema, `{"email":"a@example.com","id":"123e4567-e89b-12d3-a456-426614174000","ip4":"1.2.3.4","ip6":"::1","host":"example.com","t":"10:00:00Z"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCompile(t, tc.schema, testOpts)
			raw := []byte(tc.in)
			if e := s.Validate(raw); e != nil {
				t.Fatalf("Validate(%s) = %v", tc.in, e)
			}
			if n := testing.AllocsPerRun(200, func() { s.Validate(raw) }); n != 0 {
				t.Errorf("Validate(%s) allocates %v times", tc.in, n)
			}
		})
	}
}

func TestValidateInvalidAllocatesLittle(t *testing.T) {
	s := mustCompile(t, refundSchema, testOpts)
	raw := []byte(`{"customer_id":"CUST-00001","amount":0,"reason":"damaged on arrival"}`)
	// The Error and one string holding pointer and message.
	if n := testing.AllocsPerRun(200, func() { s.Validate(raw) }); n > 2 {
		t.Errorf("an invalid call allocates %v times", n)
	}
}
