package stdio

import (
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestReview57NumberIDsTheSDKWouldChange: the go-sdk reads a number id into
// an int64 and answers with that, so a request with id 5.5 was run and
// answered with id 5 (over HTTP a refund ran so), 9007199254740993 with
// ...992, 1e-400 with 0: the client could not match the answer to its
// request, and two such ids could name one request in the SDK. The
// transport refuses them now (-32600, the id as sent) and passes every
// number id the SDK answers with the same value.
func TestReview57NumberIDsTheSDKWouldChange(t *testing.T) {
	refused := []string{"5.5", "-0.5", "9007199254740993", "1e-400", "9007199254740994", "2.5e0", "1000000000000000.5"}
	passed := map[string]string{"7": "7", "-0": "0", "11.0": "11", "1e2": "100", "-12.50e1": "-125", "9007199254740992": "9007199254740992", "3e0": "3", "40.00e-1": "4"}
	lines := []string{initLine}
	for _, id := range refused {
		lines = append(lines, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
	}
	for id := range passed {
		lines = append(lines, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
	}
	out, _, err := serveLines(t, io.NopCloser(strings.NewReader(strings.Join(lines, "\n")+"\n")))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := map[string]string{} // id as written -> "error <code>" or "result"
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     json.RawMessage
			Result json.RawMessage
			Error  *struct{ Code int }
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		what := "result"
		if m.Error != nil {
			what = fmt.Sprintf("error %d", m.Error.Code)
		}
		got[string(m.ID)] = what
	}
	for _, id := range refused {
		if got[id] != "error -32600" {
			t.Errorf("id %s: %q; want -32600 with the id as sent (output:\n%s)", id, got[id], out)
		}
	}
	for id, echoed := range passed {
		if got[echoed] != "result" {
			t.Errorf("id %s: answer with id %s: %q; want a result", id, echoed, got[echoed])
		}
	}
}

// TestReview57ExactIntIDAgainstBigRat holds exactIntID against exact
// arithmetic: a number id passes exactly when its value is an integer
// from -2^53 to 2^53 that the go-sdk's float64 and int64 reading keeps,
// but for spellings of more than 15 significant digits with a fraction
// or an exponent, which it refuses though their value may be exact (a
// client writes integer ids as integers).
func TestReview57ExactIntIDAgainstBigRat(t *testing.T) {
	r := rand.New(rand.NewPCG(57, 1))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		return string(b)
	}
	limit := new(big.Rat).SetInt64(1 << 53)
	for i := 0; i < 200000; i++ {
		lit := digits(1 + r.IntN(18))
		if r.IntN(2) == 0 {
			lit += "." + digits(1+r.IntN(6))
		}
		if r.IntN(2) == 0 {
			lit += "e" + strconv.Itoa(r.IntN(40)-20)
		}
		if r.IntN(3) == 0 {
			lit = "-" + lit
		}
		if lit[0] == '0' && len(lit) > 1 && lit[1] >= '0' && lit[1] <= '9' || strings.HasPrefix(lit, "-0") && len(lit) > 2 && lit[2] >= '0' && lit[2] <= '9' {
			continue // a leading zero: not JSON
		}
		if _, ok := parseID(json.RawMessage(lit)); !ok {
			continue
		}
		v, ok := new(big.Rat).SetString(lit)
		if !ok {
			t.Fatalf("big.Rat cannot read %s", lit)
		}
		abs := new(big.Rat).Abs(v)
		f, _ := strconv.ParseFloat(lit, 64)
		exact := v.IsInt() && abs.Cmp(limit) <= 0 && new(big.Rat).SetInt64(int64(f)).Cmp(v) == 0
		got := exactIntID(json.RawMessage(lit))
		switch {
		case got && !exact:
			t.Fatalf("exactIntID(%s) = true, but the go-sdk answers it as %d", lit, int64(f))
		case !got && exact && !strings.ContainsAny(lit, ".e"):
			t.Fatalf("exactIntID(%s) = false for an integer the go-sdk answers unchanged", lit)
		}
	}
}
