// Package jsonnum reads JSON number text exactly: the float64 nearest to
// it, which strconv.ParseFloat misses for long numbers, and a comparison
// by exact decimal value. The policy package's argument limits and the
// gateway's view of raw arguments use it.
package jsonnum

import (
	"cmp"
	"math"
	"strconv"
)

// Float returns the float64 nearest to the JSON number text n, and
// false for text that is not JSON number syntax or a number beyond the
// float64 range. strconv.ParseFloat misreads a number with more than 800
// digits before its point: "1" and 1000 zeros "e-990", which is 1e10,
// reads as 1e-191. Such a number is given to ParseFloat as its first 768
// significant digits (enough to round any float64 correctly), a 1 if any
// digit after them is not 0, and its exponent.
func Float(n string) (float64, bool) {
	d, ok := parseDecimal(n)
	if !ok {
		return 0, false
	}
	if len(n) > 800 {
		if d.zero() {
			if d.neg {
				return math.Copysign(0, -1), true
			}
			return 0, true
		}
		var buf [800]byte
		b := buf[:0]
		if d.neg {
			b = append(b, '-')
		}
		b = append(b, "0."...)
		i := d.lead
		for ; i < d.len() && i < d.lead+768; i++ {
			b = append(b, d.digit(i))
		}
		for ; i < d.len(); i++ {
			if d.digit(i) != '0' {
				b = append(b, '1')
				break
			}
		}
		b = append(b, 'e')
		// Beyond ±9999 every number is 0 or out of range, as here.
		b = strconv.AppendInt(b, min(max(d.point, -9999), 9999), 10)
		n = string(b)
	}
	f, err := strconv.ParseFloat(n, 64)
	return f, err == nil && !math.IsInf(f, 0)
}

// Above reports whether the JSON number text n is larger than max as its
// author wrote it: the shortest decimal that reads as max (strconv's 'e'
// with precision -1), so 99.99 for the float64 99.98999999999999488...
// that "99.99" becomes. A
// number just above a limit rounds to the limit itself
// ("100.000000000000001", or 2^53+1 against 2^53), and a handler that
// decodes it exactly (an int64, a json.Number, a decimal type) would act
// on more than the limit allows; but the limit's own value must pass,
// which a comparison with the float64's exact binary value refused for
// 99.99 or 0.3. A number whose float64 is below max is below that decimal
// too (rounding is monotonic), and one above is above it, so the limit is
// exactly that decimal. Text that is not JSON number syntax counts as
// above: it cannot be compared. Every number is below a max of +Inf and
// above one of -Inf or NaN. The work is linear in the length of n; it
// does not allocate for the short numbers calls carry.
func Above(n string, max float64) bool {
	a, ok := parseDecimal(n)
	if !ok {
		return true
	}
	if math.IsInf(max, 1) {
		return false // "+Inf" is no decimal, but every number is below it
	}
	var buf [32]byte
	b, ok := parseDecimal(strconv.AppendFloat(buf[:0], max, 'e', -1, 64))
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
