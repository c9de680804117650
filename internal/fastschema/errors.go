package fastschema

import (
	"strconv"
	"unicode/utf8"
)

type errKind uint8

const (
	// Problems the reference pipeline finds before schema validation.
	errSyntax errKind = iota
	errTrailing
	errDepth
	errDup
	errText // invalid UTF-8 or an escaped lone UTF-16 surrogate
	errKeyTooLong
	errKeyControl
	errTooLong
	errControl
	errNumber
	// Schema violations.
	errNotObject
	errNever
	errType
	errEnum
	errMinLen
	errMaxLen
	errPattern
	errFormat
	errBound
	errRequired
	errUnknown
	errMinProps
	errMaxProps
	errMinItems
	errMaxItems
)

const errLastSyntactic = errNumber

// failure is the internal name of an *Error under construction.
type failure = Error

// maxNameBytes truncates argument names quoted in messages.
const maxNameBytes = 64

// fail builds the error for a problem at the first plen path segments
// (plus key, the raw content of an object key, when not nil). n and b supply
// the numbers and names some messages quote. It allocates the Error and one
// string holding both the pointer and the message.
func (st *state) fail(k errKind, plen int, key []byte, plain bool, n *node, b *bound) *failure {
	buf := make([]byte, 0, 256)   // pointer, then message
	dotted := make([]byte, 0, 96) // the name, a.b.0
	segs := 0
	add := func(tok []byte) {
		buf = append(buf, '/')
		for _, c := range tok {
			switch c {
			case '~':
				buf = append(buf, '~', '0')
			case '/':
				buf = append(buf, '~', '1')
			default:
				buf = append(buf, c)
			}
		}
		if segs > 0 {
			dotted = append(dotted, '.')
		}
		segs++
		dotted = append(dotted, tok...)
	}
	addKey := func(raw []byte, plain bool) {
		if plain {
			add(raw)
			return
		}
		st.kbuf2 = decodeString(st.kbuf2[:0], raw)
		add(st.kbuf2)
	}
	if k >= errDup {
		for _, s := range st.path[:plen] {
			if s.key == nil {
				var num [20]byte
				add(strconv.AppendInt(num[:0], int64(s.index), 10))
			} else {
				addKey(s.key, s.plain)
			}
		}
		if key != nil {
			addKey(key, plain)
		}
	}
	plen = len(buf)
	name := func() {
		if plen == 0 {
			// The document itself, as the reference calls it.
			buf = append(buf, "value"...)
			return
		}
		if len(dotted) > maxNameBytes {
			cut := maxNameBytes
			for cut > 0 && !utf8.RuneStart(dotted[cut]) {
				cut--
			}
			dotted = append(dotted[:cut], "…"...)
		}
		buf = append(buf, "argument "...)
		buf = strconv.AppendQuote(buf, string(dotted))
	}
	num := func(prefix string, v int, suffix string) {
		name()
		buf = append(buf, prefix...)
		buf = strconv.AppendInt(buf, int64(v), 10)
		buf = append(buf, suffix...)
	}
	switch k {
	case errSyntax:
		buf = append(buf, "arguments are not valid JSON"...)
	case errTrailing:
		buf = append(buf, "arguments have trailing data"...)
	case errDepth:
		buf = append(buf, "arguments are nested too deeply"...)
	case errText:
		buf = append(buf, "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"...)
	case errNotObject:
		buf = append(buf, "arguments must be a JSON object"...)
	case errDup:
		name()
		buf = append(buf, " appears twice"...)
	case errKeyTooLong, errKeyControl:
		buf = append(buf, "argument names must be short and free of control characters"...)
	case errTooLong:
		num(" is longer than ", st.s.opts.MaxStringBytes, " bytes")
	case errControl:
		name()
		buf = append(buf, " contains control characters"...)
	case errNumber:
		num(" is a number of more than ", MaxNumberLen, " characters or with an exponent beyond ±")
		buf = strconv.AppendInt(buf, MaxNumberExp, 10)
	case errNever:
		name()
		buf = append(buf, " is not allowed"...)
	case errType:
		name()
		buf = append(buf, " must be"...)
		sep := " "
		// In v6's order (jsonschema.Types.ToStrings): null, boolean,
		// number, integer, string, array, object.
		for _, i := range [numTypes]int{6, 5, 3, 4, 2, 1, 0} {
			if n.types&(1<<uint(i)) != 0 {
				buf = append(buf, sep...)
				buf = append(buf, typeName(i)...)
				sep = " or "
			}
		}
	case errEnum:
		name()
		buf = append(buf, " is not one of the allowed values"...)
	case errMinLen:
		num(" must be at least ", n.minLen, " characters")
	case errMaxLen:
		num(" must be at most ", n.maxLen, " characters")
	case errPattern:
		name()
		buf = append(buf, " must match the pattern "...)
		buf = append(buf, n.patternSrc...)
	case errFormat:
		name()
		buf = append(buf, " must be a valid "...)
		buf = append(buf, n.formatName...)
	case errBound:
		name()
		buf = append(buf, " must be "...)
		buf = append(buf, [...]string{opMin: ">=", opMax: "<=", opExMin: ">", opExMax: "<"}[b.op]...)
		buf = append(buf, ' ')
		buf = append(buf, b.text...)
	case errRequired:
		buf = append(buf, "missing required "...)
		name()
	case errUnknown:
		buf = append(buf, "unknown "...)
		name()
	case errMinProps:
		num(" must have at least ", n.minProps, " properties")
	case errMaxProps:
		num(" must have at most ", n.maxProps, " properties")
	case errMinItems:
		num(" must have at least ", n.minItems, " items")
	case errMaxItems:
		num(" must have at most ", n.maxItems, " items")
	}
	all := string(buf)
	return &failure{Pointer: all[:plen], Message: all[plen:], kind: k}
}
