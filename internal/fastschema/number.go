package fastschema

// maxExp5 is the largest decimal exponent magnitude math/big.Rat.SetString
// accepts for a nonzero mantissa; beyond it SetString fails, and so does the
// reference validator's number handling.
const maxExp5 = 1_000_000

// MaxNumberLen and MaxNumberExp bound a number literal in the arguments,
// as mcpguard bounds it before the reference validator runs (whose exact
// arithmetic takes seconds on a megabyte of digits): a literal longer than
// MaxNumberLen bytes, or with an exponent beyond ±MaxNumberExp, is
// invalid. Far beyond any float64 (17 significant digits, exponents within
// ±324).
const (
	MaxNumberLen = 128
	MaxNumberExp = 400
)

// NumberInRange reports whether the JSON number literal lit is at most
// MaxNumberLen bytes long and its exponent, if it has one, within
// ±MaxNumberExp (leading zeros aside: 1e+0400 is in range). mcpguard's
// reference pipeline applies it too.
func NumberInRange(lit string) bool { return numberInRange(lit) }

// numberInRange is [NumberInRange] for the literal as a string or as the
// bytes of the arguments.
func numberInRange[T ~string | ~[]byte](lit T) bool {
	if len(lit) > MaxNumberLen {
		return false
	}
	e, exp := 0, false
	for i := 0; i < len(lit); i++ {
		switch c := lit[i]; {
		case c == 'e' || c == 'E':
			exp = true
		case exp && isDigit(c):
			if e = e*10 + int(c-'0'); e > MaxNumberExp {
				return false
			}
		}
	}
	return true
}

// A decimal is a JSON number literal analysed without allocating: its
// significant digits (the concatenation hi+lo, with no leading or trailing
// zeros) and the decimal exponent of its most significant digit, so that the
// value is 0.d1d2d3... × 10^sci.
type decimal struct {
	neg   bool
	zero  bool
	ratOK bool // big.Rat.SetString would accept the literal
	isInt bool // ratOK and the value is an integer (as v6's isInteger)
	hi    []byte
	lo    []byte
	sci   int64
}

func (d *decimal) ndigits() int { return len(d.hi) + len(d.lo) }

func (d *decimal) digit(i int) byte {
	if i < len(d.hi) {
		return d.hi[i]
	}
	if i-len(d.hi) < len(d.lo) {
		return d.lo[i-len(d.hi)]
	}
	return '0'
}

// parseDecimal analyses lit, which must match the JSON number grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? (with an optional '+'
// exponent sign, which fmt produces for float64 schema values).
func parseDecimal(lit []byte) (d decimal, ok bool) {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		d.neg = true
		i++
	}
	intStart := i
	for i < len(lit) && isDigit(lit[i]) {
		i++
	}
	intPart := lit[intStart:i]
	if len(intPart) == 0 {
		return d, false
	}
	var frac []byte
	if i < len(lit) && lit[i] == '.' {
		i++
		fs := i
		for i < len(lit) && isDigit(lit[i]) {
			i++
		}
		frac = lit[fs:i]
		if len(frac) == 0 {
			return d, false
		}
	}
	expOK := true
	var exp int64
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			eneg = lit[i] == '-'
			i++
		}
		es := i
		var u uint64
		for i < len(lit) && isDigit(lit[i]) {
			const limit = 1<<63 + 1 // saturate: anything above 2^63 fails alike
			if u > limit/10 {
				u = limit
			} else if u = u*10 + uint64(lit[i]-'0'); u > limit {
				u = limit
			}
			i++
		}
		if i == es {
			return d, false
		}
		// strconv.ParseInt(digits, 10, 64) range: [-2^63, 2^63-1].
		switch {
		case eneg && u <= 1<<63:
			exp = -int64(u - 1)
			exp-- // -(u) without overflowing for u == 2^63
		case !eneg && u < 1<<63:
			exp = int64(u)
		default:
			expOK = false
		}
	}
	if i != len(lit) {
		return d, false
	}
	// Significant digits: strip leading zeros across int then frac.
	hi, lo := intPart, frac
	for len(hi) > 0 && hi[0] == '0' {
		hi = hi[1:]
	}
	if len(hi) == 0 {
		for len(lo) > 0 && lo[0] == '0' {
			lo = lo[1:]
		}
	}
	if len(hi)+len(lo) == 0 {
		d.zero = true
		d.neg = false
		d.ratOK = expOK // SetString parses the exponent before its zero shortcut
		d.isInt = expOK
		return d, true
	}
	// Trailing zeros: strip from lo, then hi when lo is exhausted.
	tz := int64(0)
	for len(lo) > 0 && lo[len(lo)-1] == '0' {
		lo = lo[:len(lo)-1]
		tz++
	}
	if len(lo) == 0 {
		for len(hi) > 0 && hi[len(hi)-1] == '0' {
			hi = hi[:len(hi)-1]
			tz++
		}
	}
	// exp5 = exp - len(frac): the value is digits(int+frac) × 10^exp5.
	if !expOK {
		return d, true
	}
	fl := int64(len(frac))
	if exp < -maxExp5-fl || exp > maxExp5+fl {
		return d, true // |exp5| > 1e6 (or it would overflow): SetString fails
	}
	exp5 := exp - fl
	if exp5 < -maxExp5 || exp5 > maxExp5 {
		return d, true
	}
	d.ratOK = true
	d.isInt = exp5+tz >= 0
	// Position of the most significant digit: the significant digits of
	// int+frac (after stripping leading zeros, before stripping trailing
	// ones) number sig; the value is 0.<sig digits> × 10^(sig+exp5).
	sig := int64(len(hi)+len(lo)) + tz
	d.sci = sig + exp5
	d.hi, d.lo = hi, lo
	return d, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// cmpDecimal compares two numbers whose ratOK is true: -1, 0 or +1.
func cmpDecimal(x, y *decimal) int {
	sx, sy := sign(x), sign(y)
	if sx != sy {
		if sx < sy {
			return -1
		}
		return 1
	}
	if sx == 0 {
		return 0
	}
	m := cmpMagnitude(x, y)
	if sx < 0 {
		return -m
	}
	return m
}

func sign(d *decimal) int {
	switch {
	case d.zero:
		return 0
	case d.neg:
		return -1
	}
	return 1
}

func cmpMagnitude(x, y *decimal) int {
	if x.sci != y.sci {
		if x.sci < y.sci {
			return -1
		}
		return 1
	}
	n := max(x.ndigits(), y.ndigits())
	for i := 0; i < n; i++ {
		a, b := x.digit(i), y.digit(i)
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	return 0
}
