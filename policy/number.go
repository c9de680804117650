package policy

import (
	"cmp"
	"strconv"
)

// aboveExactly reports whether the JSON number text n, whose nearest
// float64 is max, is in fact larger than max. A number just above a limit
// rounds to the limit itself ("100.000000000000001", or 2^53+1 against
// 2^53), and a handler that decodes it exactly (an int64, a json.Number, a
// decimal type) would act on more than the limit allows. Text that is not
// JSON number syntax counts as above: it cannot be compared. The work is
// linear in the length of n; it does not allocate for the short numbers
// calls carry.
func aboveExactly(n string, max float64) bool {
	a, ok := parseDecimal(n)
	if !ok {
		return true
	}
	var buf [800]byte
	// 767 significant digits hold every float64 exactly; more only pad.
	b, ok := parseDecimal(strconv.AppendFloat(buf[:0], max, 'e', 780, 64))
	return !ok || compareDecimal(a, b) > 0
}

// A decimal is the exact value of a number's text: the digits of its
// integer and fraction parts read as one digit string d, the value is
// ±0.d[lead:] × 10^point. Trailing zeros do not change it.
type decimal[S ~string | ~[]byte] struct {
	neg          bool
	ipart, fpart S
	lead         int   // index of the first non-zero digit; len(d) when zero
	point        int64 // saturated: far beyond any float64, never overflowing
}

func (d *decimal[S]) len() int { return len(d.ipart) + len(d.fpart) }

// digit returns the i-th digit of d, or '0' past its end.
func (d *decimal[S]) digit(i int) byte {
	if i < len(d.ipart) {
		return d.ipart[i]
	}
	if i -= len(d.ipart); i < len(d.fpart) {
		return d.fpart[i]
	}
	return '0'
}

func (d *decimal[S]) zero() bool { return d.lead >= d.len() }

// parseDecimal reads s as a JSON number ("-"? int ("." digits)? ([eE]
// [+-]? digits)?), also allowing the "+" of an exponent strconv writes.
func parseDecimal[S ~string | ~[]byte](s S) (decimal[S], bool) {
	var d decimal[S]
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == start || (s[start] == '0' && i-start > 1) {
		return d, false
	}
	d.ipart = s[start:i]
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return d, false
		}
		d.fpart = s[start:i]
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		start = i
		for ; i < len(s) && isDigit(s[i]); i++ {
			if exp < 1<<40 {
				exp = exp*10 + int64(s[i]-'0')
			}
		}
		if i == start {
			return d, false
		}
		if neg {
			exp = -exp
		}
	}
	if i != len(s) {
		return d, false
	}
	for d.lead < d.len() && d.digit(d.lead) == '0' {
		d.lead++
	}
	d.point = int64(len(d.ipart)-d.lead) + exp
	return d, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// compareDecimal returns -1, 0 or +1 as a is less than, equal to or
// greater than b.
func compareDecimal[A, B ~string | ~[]byte](a decimal[A], b decimal[B]) int {
	sa, sb := a.sign(), b.sign()
	if sa != sb || sa == 0 {
		return cmp.Compare(sa, sb)
	}
	// Same sign, both non-zero: compare magnitudes, then orient.
	m := cmp.Compare(a.point, b.point)
	for i := 0; m == 0 && (a.lead+i < a.len() || b.lead+i < b.len()); i++ {
		m = cmp.Compare(a.digit(a.lead+i), b.digit(b.lead+i))
	}
	return m * sa
}

func (d *decimal[S]) sign() int {
	switch {
	case d.zero():
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// aboveMax reports whether the argument field of args, whose float64 value
// equals max, is in fact larger: for an [ExactArgs] that has the number's
// text, by its exact decimal value. Without the text, the float64 is taken
// as exact.
func aboveMax(args Args, field string, max float64) bool {
	a, ok := args.(ExactArgs)
	if !ok {
		return false
	}
	n, ok := a.NumberText(field)
	return ok && aboveExactly(n, max)
}
