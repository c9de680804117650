package main

import (
	"strings"
	"testing"
	"time"
)

func hardeningStart(t *testing.T) *rawServer {
	t.Helper()
	s := startRaw(t, nil, alice)
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, true)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, false)
	return s
}

// TestHugeAmountLiteralIsCheap: a number literal of any length (up to the
// SDK's 16 MiB line) would be parsed into an exact rational before the
// amount's bound is checked, in time quadratic in its length (seconds for a
// megabyte of digits): one line from a client would pin a core. The
// refusal is immediate.
func TestHugeAmountLiteralIsCheap(t *testing.T) {
	s := hardeningStart(t)
	amount := "1" + strings.Repeat("0", 1800000)
	start := time.Now()
	r := s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":`+amount+`,"reason":"absurdly long number"}}}`, true)
	d := time.Since(start)
	if r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("1.8 MB amount literal: %+v, want -32602", r)
	}
	if d > 3*time.Second {
		t.Errorf("refusing a 1.8 MB amount literal took %v, want well under 3s", d)
	}
}

// TestValidAmountNeverInternalError: "1" followed by 200000 zeros and
// "e-200000" is exactly 1.00 to exact rationals but not to
// strconv.ParseFloat: the seed's contract is a result or -32602 for it,
// never an internal error for something the client sent.
func TestValidAmountNeverInternalError(t *testing.T) {
	s := hardeningStart(t)
	amount := "1" + strings.Repeat("0", 200000) + "e-200000"
	for i, id := range []string{"CUST-00001", "CUST-99999"} {
		r := s.send(t, `{"jsonrpc":"2.0","id":`+string(rune('2'+i))+`,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"`+id+`","amount":`+amount+`,"reason":"exactly one unit, spelled long"}}}`, true)
		if r.Error != nil && r.Error.Code != -32602 {
			t.Errorf("%s: amount 1 (written 1000…e-200000): error %d %q, want a result or -32602", id, r.Error.Code, r.Error.Message)
		}
	}
}
