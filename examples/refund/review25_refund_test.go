package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawRefund sends a trigger_refund with raw JSON arguments and returns
// the response.
func (s *rawServer) rawRefund(t *testing.T, id int, args string) response {
	t.Helper()
	return s.send(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":{"name":"trigger_refund","arguments":`+args+`}}`, true)
}

// startRawInitialized is startRaw with the handshake done.
func startRawInitialized(t *testing.T, args []string, env ...string) *rawServer {
	t.Helper()
	s := startRaw(t, args, env...)
	s.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, true)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, false)
	return s
}

// TestReview25AmountSpellings: the amounts of the brief as raw JSON
// literals. Half a cent, 1e-7, "10.00" as a string, -0, a value a hair
// off whole cents (even one float64 rounds to whole cents), one a hair
// over the maximum and one below float64's range are -32602 naming amount
// and refund nothing; other spellings of whole cents (1e2, 1E-2, 0.1e-1)
// are those amounts exactly, and the total adds up in cents.
func TestReview25AmountSpellings(t *testing.T) {
	s := startRawInitialized(t, []string{"-session-cap", "100000", "-user-cap", "100000"}, alice)
	id := 1
	for _, amount := range []string{
		"0.005", "1e-7", `"10.00"`, "-0", "-0e0", "10.005", "1.0000000000000001", "0.01000000000000000001",
		"1e-400", "1000000.0000000000001", "-10", `"1e2"`,
	} {
		id++
		r := s.rawRefund(t, id, `{"customer_id":"CUST-00001","amount":`+amount+`,"reason":"amount spelled oddly"}`)
		if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, `"amount"`) {
			t.Errorf("amount %s: %s %+v, want -32602 naming amount", amount, r.Result, r.Error)
		}
	}
	for _, c := range []struct{ amount, want, total string }{
		{"1e2", `\"amount\":100,`, `\"refunded_total\":100,`},
		{"1E-2", `\"amount\":0.01,`, `\"refunded_total\":100.01,`},
		{"0.1e-1", `\"amount\":0.01,`, `\"refunded_total\":100.02,`},
		{"0.29", `\"amount\":0.29,`, `\"refunded_total\":100.31,`},
	} {
		id++
		r := s.rawRefund(t, id, `{"customer_id":"CUST-00001","amount":`+c.amount+`,"reason":"amount spelled oddly"}`)
		if r.Error != nil || !strings.Contains(string(r.Result), `\"status\":\"processed\"`) ||
			!strings.Contains(string(r.Result), c.want) || !strings.Contains(string(r.Result), c.total) {
			t.Errorf("amount %s: %s %+v, want processed with %s and %s", c.amount, r.Result, r.Error, c.want, c.total)
		}
	}
}

// TestReview25CustomerIDSpellings: customer ids written differently from
// a record's (case, blanks, look-alike letters and digits, another hyphen,
// a digit too many or too few, a zero-width character) are -32602 and
// refund nothing, so they neither reach the record nor get a total of
// their own beside it; argument names that encoding/json would fold onto
// customer_id or amount in the handler (CUSTOMER_ID, "cuſtomer_id" with a
// long s, "AMOUNT") are refused too. A JSON escape of the id is the same id
// and counts against the same paid total.
func TestReview25CustomerIDSpellings(t *testing.T) {
	s := startRawInitialized(t, []string{"-session-cap", "100000", "-user-cap", "100000"}, alice)
	id := 1
	for _, cid := range []string{
		"cust-00002", "Cust-00002", " CUST-00002", "CUST-00002 ", "CUST-0002", "CUST-000002", "CUST-00002\\n",
		"\u0421UST-00002", "CUST-0000\uff12", "CUST\u201100002", "CUST-\u200b00002", "CUST-00002\u0301",
		"\uff23\uff35\uff33\uff34-00002", "CUST_00002", "CUST00002",
	} {
		id++
		r := s.rawRefund(t, id, `{"customer_id":"`+cid+`","amount":480,"reason":"another spelling of the id"}`)
		if r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("customer_id %q: %s %+v, want -32602", cid, r.Result, r.Error)
		}
	}
	for _, extra := range []string{`"CUSTOMER_ID":"CUST-00001"`, `"cuſtomer_id":"CUST-00001"`, `"Customer_Id":"CUST-00001"`, `"AMOUNT":480`, `"amoun\u0074":480`} {
		id++
		r := s.rawRefund(t, id, `{"customer_id":"CUST-00002","amount":0.01,"reason":"a folded argument name",`+extra+`}`)
		if r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("extra %s: %s %+v, want -32602", extra, r.Result, r.Error)
		}
	}
	id++
	if r := s.rawRefund(t, id, `{"customer_id":"\u0043UST-00002","amount":479.99,"reason":"escaped id, same customer"}`); r.Error != nil || !strings.Contains(string(r.Result), `\"refunded_total\":479.99`) {
		t.Fatalf("escaped id: %s %+v, want processed, refunded_total 479.99", r.Result, r.Error)
	}
	id++
	if r := s.rawRefund(t, id, `{"customer_id":"CUST-00002","amount":0.02,"reason":"past the paid total"}`); r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), `\"refundable\":0.01`) {
		t.Errorf("0.02 after 479.99 of 480: %s %+v, want refused with refundable 0.01", r.Result, r.Error)
	}
}

// concurrentRefunds runs n refunds at once through do, which returns the
// refund's status and isError, or "capped" for a -32029, and counts those
// processed, refused and capped.
func concurrentRefunds(t *testing.T, n int, do func(i int) (status string, isError bool)) (processed, refused, capped int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			status, isError := do(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case status == "capped":
				capped++
			case isError && status == "refused":
				refused++
			case !isError && status == "processed":
				processed++
			default:
				t.Errorf("refund %d: status %q, isError %v", i, status, isError)
			}
		})
	}
	wg.Wait()
	return processed, refused, capped
}

// httpRefund posts a refund of amount to CUST-00002 as subject and
// returns its status and isError, or "capped" for a -32029.
func httpRefund(t *testing.T, base string, id int, subject, amount string) (string, bool) {
	t.Helper()
	_, resp := post(t, base, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00002","amount":`+amount+`,"reason":"racing for the paid total"}}}`,
		map[string]string{headerSubject: subject})
	if resp.Error != nil && resp.Error.Code == -32029 {
		return "capped", false
	}
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Status string `json:"status"`
		} `json:"structuredContent"`
	}
	if resp.Error != nil || json.Unmarshal(resp.Result, &res) != nil {
		t.Errorf("refund %d: %s %+v", id, resp.Result, resp.Error)
	}
	return res.StructuredContent.Status, res.IsError
}

// stdioRefund is httpRefund over a client session.
func stdioRefund(t *testing.T, cs *mcp.ClientSession, amount float64) (string, bool) {
	t.Helper()
	got, isError, we := refundResult(t, cs, "CUST-00002", amount)
	if we != nil {
		if we.Code == -32029 {
			return "capped", false
		}
		t.Errorf("refund: %d %q", we.Code, we.Message)
		return "", false
	}
	status, _ := got["status"].(string)
	return status, isError
}

// TestReview25ConcurrentRefundsOverHTTP: over HTTP, refunds racing for the
// last of what a customer paid, each from another subject (so no cap
// stops them), never go beyond it together: of 48 refunds of 20 to a
// customer who paid 480, exactly 24 are made. Refunds of one subject
// racing for the last of its cap (200) never go beyond it either.
func TestReview25ConcurrentRefundsOverHTTP(t *testing.T) {
	t.Run("paid_total", func(t *testing.T) {
		base := startHTTP(t, "-session-cap", "100000", "-user-cap", "100000")
		p, r, c := concurrentRefunds(t, 48, func(i int) (string, bool) {
			return httpRefund(t, base, i+1, "caller-"+strconv.Itoa(i), "20")
		})
		if p != 24 || r != 24 || c != 0 {
			t.Errorf("48 concurrent refunds of 20 over HTTP, 480 paid: %d processed, %d refused, %d capped; want 24, 24, 0", p, r, c)
		}
		_, resp := post(t, base, `{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00002"}}}`, nil)
		if !strings.Contains(string(resp.Result), `\"refunded_total\":480`) {
			t.Errorf("after the race: %s, want refunded_total 480", resp.Result)
		}
	})
	t.Run("cap", func(t *testing.T) {
		base := startHTTP(t, "-session-cap", "100000", "-user-cap", "200", "-cap-window", "1000h")
		p, r, c := concurrentRefunds(t, 40, func(i int) (string, bool) {
			return httpRefund(t, base, i+1, "alice@example.com", "10")
		})
		if p != 20 || r != 0 || c != 20 {
			t.Errorf("40 concurrent refunds of 10 over HTTP under a cap of 200: %d processed, %d refused, %d capped; want 20, 0, 20", p, r, c)
		}
	})
}

// TestReview25ConcurrentRefundsOverStdio: the same races through the
// binary's stdio, the requests written at once on one session (the server
// runs them concurrently).
func TestReview25ConcurrentRefundsOverStdio(t *testing.T) {
	t.Run("paid_total", func(t *testing.T) {
		cs, _ := connect(t, "", []string{"-session-cap", "100000", "-user-cap", "100000"}, alice)
		p, r, c := concurrentRefunds(t, 48, func(int) (string, bool) { return stdioRefund(t, cs, 20) })
		if p != 24 || r != 24 || c != 0 {
			t.Errorf("48 concurrent refunds of 20 over stdio, 480 paid: %d processed, %d refused, %d capped; want 24, 24, 0", p, r, c)
		}
		if refunded, _ := refundedTotal(t, cs, "CUST-00002"); refunded != 480.0 {
			t.Errorf("refunded_total %v after the race, want 480", refunded)
		}
	})
	t.Run("cap", func(t *testing.T) {
		cs, _ := connect(t, "", []string{"-session-cap", "100000", "-user-cap", "200", "-cap-window", "1000h"}, alice)
		p, r, c := concurrentRefunds(t, 40, func(int) (string, bool) { return stdioRefund(t, cs, 10) })
		if p != 20 || r != 0 || c != 20 {
			t.Errorf("40 concurrent refunds of 10 over stdio under a cap of 200: %d processed, %d refused, %d capped; want 20, 0, 20", p, r, c)
		}
	})
}
