package fastschema

import (
	"bytes"
	"net/netip"
	"unsafe"
)

// The format checkers below reproduce, byte for byte and without
// allocating, the verdicts of the format functions of
// github.com/santhosh-tekuri/jsonschema/v6 (format.go); format_test.go fuzzes
// each against the original. "uri" is not reimplemented: it calls v6's own
// function (see Compile), which allocates.

// A formatFunc reports whether the decoded string b is of the format.
type formatFunc func(b []byte) bool

func builtinFormat(name string) formatFunc {
	switch name {
	case "date":
		return isDate
	case "time":
		return isTime
	case "date-time":
		return isDateTime
	case "email":
		return isEmail
	case "uuid":
		return isUUID
	case "ipv4":
		return isIPv4
	case "ipv6":
		return isIPv6
	case "hostname":
		return isHostname
	}
	return nil
}

// isDate is time.Parse("2006-01-02", s) == nil.
func isDate(b []byte) bool {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return false
	}
	for _, i := range [...]int{0, 1, 2, 3, 5, 6, 8, 9} {
		if !isDigit(b[i]) {
			return false
		}
	}
	year := int(b[0]-'0')*1000 + int(b[1]-'0')*100 + int(b[2]-'0')*10 + int(b[3]-'0')
	month := int(b[5]-'0')*10 + int(b[6]-'0')
	day := int(b[8]-'0')*10 + int(b[9]-'0')
	if month < 1 || month > 12 || day < 1 {
		return false
	}
	return day <= daysIn(month, year)
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// atoi2 is strconv.Atoi on a two-byte string, reporting failure for the
// negative values v6's time check refuses ("-0" is 0 and passes).
func atoi2(b []byte) (int, bool) {
	switch {
	case isDigit(b[0]) && isDigit(b[1]):
		return int(b[0]-'0')*10 + int(b[1]-'0'), true
	case b[0] == '+' && isDigit(b[1]):
		return int(b[1] - '0'), true
	case b[0] == '-' && b[1] == '0':
		return 0, true
	}
	return 0, false
}

// isTime is v6's validateTime (RFC 3339 full-time, leap seconds only at
// 23:59 UTC).
func isTime(b []byte) bool {
	if len(b) < 9 || b[2] != ':' || b[5] != ':' {
		return false
	}
	h, ok1 := atoi2(b[0:2])
	m, ok2 := atoi2(b[3:5])
	s, ok3 := atoi2(b[6:8])
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || s > 60 {
		return false
	}
	b = b[8:]
	if len(b) > 0 && b[0] == '.' {
		n := 1
		for n < len(b) && isDigit(b[n]) {
			n++
		}
		if n == 1 {
			return false
		}
		b = b[n:]
	}
	if !(len(b) == 1 && (b[0] == 'z' || b[0] == 'Z')) {
		if len(b) != 6 {
			return false
		}
		var sign int
		switch b[0] {
		case '+':
			sign = -1
		case '-':
			sign = +1
		default:
			return false
		}
		b = b[1:]
		if b[2] != ':' {
			return false
		}
		zh, ok1 := atoi2(b[0:2])
		zm, ok2 := atoi2(b[3:5])
		if !ok1 || !ok2 || zh > 23 || zm > 59 {
			return false
		}
		hm := (h*60 + m) + sign*(zh*60+zm)
		if hm < 0 {
			hm += 24 * 60
		}
		h, m = hm/60, hm%60
	}
	return s < 60 || (h == 23 && m == 59)
}

// isDateTime is v6's validateDateTime.
func isDateTime(b []byte) bool {
	if len(b) < 20 || (b[10] != 't' && b[10] != 'T') {
		return false
	}
	return isDate(b[:10]) && isTime(b[11:])
}

// isUUID is v6's validateUUID: five hex groups of 8-4-4-4-12.
func isUUID(b []byte) bool {
	if len(b) != 36 {
		return false
	}
	for i, c := range b {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// isIPv4 is v6's validateIPV4: four dot-separated strconv.Atoi decimals in
// 0..255 without leading zeros (Atoi accepts a sign, so "+1" and "-0" pass).
func isIPv4(b []byte) bool {
	groups := 0
	for {
		i := bytes.IndexByte(b, '.')
		g := b
		if i >= 0 {
			g = b[:i]
		}
		groups++
		if groups > 4 || !ipv4Group(g) {
			return false
		}
		if i < 0 {
			return groups == 4
		}
		b = b[i+1:]
	}
}

func ipv4Group(g []byte) bool {
	if len(g) > 1 && g[0] == '0' {
		return false
	}
	neg := false
	if len(g) > 0 && (g[0] == '+' || g[0] == '-') {
		neg = g[0] == '-'
		g = g[1:]
	}
	if len(g) == 0 {
		return false
	}
	n := 0
	for _, c := range g {
		if !isDigit(c) {
			return false
		}
		if n <= 255 {
			n = n*10 + int(c-'0')
		}
	}
	if neg {
		return n == 0
	}
	return n <= 255
}

// isIPv6 is v6's validateIPV6: netip.ParseAddr without a zone, and the
// text must contain a colon.
func isIPv6(b []byte) bool {
	if bytes.IndexByte(b, ':') < 0 {
		return false
	}
	// The string aliases b only for the duration of the call; neither
	// the address nor the (discarded) error outlives it.
	addr, err := netip.ParseAddr(unsafe.String(unsafe.SliceData(b), len(b)))
	return err == nil && addr.Zone() == ""
}

// isHostname is v6's validateHostname.
func isHostname(b []byte) bool {
	b = bytes.TrimSuffix(b, []byte{'.'})
	if len(b) > 253 {
		return false
	}
	for {
		i := bytes.IndexByte(b, '.')
		label := b
		if i >= 0 {
			label = b[:i]
		}
		if len(label) < 1 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !isAlnum(c) && c != '-' {
				return false
			}
		}
		if i < 0 {
			return true
		}
		b = b[i+1:]
	}
}

func isAlnum(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// isEmail is v6's validateEmail.
func isEmail(b []byte) bool {
	if len(b) > 254 {
		return false
	}
	at := bytes.LastIndexByte(b, '@')
	if at < 0 {
		return false
	}
	local, domain := b[:at], b[at+1:]
	if len(local) > 64 {
		return false
	}
	if len(local) > 1 && local[0] == '"' && local[len(local)-1] == '"' {
		inner := local[1 : len(local)-1]
		if bytes.IndexByte(inner, '\\') >= 0 || bytes.IndexByte(inner, '"') >= 0 {
			return false
		}
	} else {
		if len(local) > 0 && (local[0] == '.' || local[len(local)-1] == '.') {
			return false
		}
		if bytes.Contains(local, []byte("..")) {
			return false
		}
		for _, c := range local {
			if !isAlnum(c) && bytes.IndexByte([]byte(".!#$%&'*+-/=?^_`{|}~"), c) < 0 {
				return false
			}
		}
	}
	if len(domain) >= 2 && domain[0] == '[' && domain[len(domain)-1] == ']' {
		domain = domain[1 : len(domain)-1]
		if rem, ok := bytes.CutPrefix(domain, []byte("IPv6:")); ok {
			return isIPv6(rem)
		}
		return isIPv4(domain)
	}
	return isHostname(domain)
}
