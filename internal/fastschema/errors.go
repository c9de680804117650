package fastschema

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

type errKind uint8

const (
	// Problems the reference pipeline finds before schema validation.
	errSyntax errKind = iota
	errTrailing
	errDepth
	errDup
	errKeyTooLong
	errKeyControl
	errTooLong
	errControl
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

const errLastSyntactic = errControl

// failure is the internal name of an *Error under construction.
type failure = Error

// maxNameBytes truncates argument names quoted in messages.
const maxNameBytes = 64

// fail builds the error for a problem at the first plen path segments
// (plus key, the raw content of an object key, when not nil). n and b supply
// the numbers and names some messages quote.
func (st *state) fail(k errKind, plen int, key []byte, plain bool, n *node, b *bound) *failure {
	var ptr, dotted strings.Builder
	add := func(tok string) {
		ptr.WriteByte('/')
		ptr.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
		if dotted.Len() > 0 {
			dotted.WriteByte('.')
		}
		dotted.WriteString(tok)
	}
	if k >= errDup {
		for _, s := range st.path[:plen] {
			if s.key == nil {
				add(strconv.Itoa(s.index))
			} else {
				add(keyText(s.key, s.plain))
			}
		}
		if key != nil {
			add(keyText(key, plain))
		}
	}
	name := "arguments"
	if dotted.Len() > 0 {
		d := dotted.String()
		if len(d) > maxNameBytes {
			cut := maxNameBytes
			for cut > 0 && !utf8.RuneStart(d[cut]) {
				cut--
			}
			d = d[:cut] + "…"
		}
		name = "argument " + strconv.Quote(d)
	}
	var msg string
	switch k {
	case errSyntax:
		msg = "arguments are not valid JSON"
	case errTrailing:
		msg = "arguments have trailing data"
	case errDepth:
		msg = "arguments are nested too deeply"
	case errNotObject:
		msg = "arguments must be a JSON object"
	case errDup:
		msg = name + " appears twice"
	case errKeyTooLong:
		msg = "argument names must be at most " + strconv.Itoa(st.s.opts.MaxStringBytes) + " bytes long"
	case errKeyControl:
		msg = "argument names must not contain control characters"
	case errTooLong:
		msg = name + " is longer than " + strconv.Itoa(st.s.opts.MaxStringBytes) + " bytes"
	case errControl:
		msg = name + " contains control characters"
	case errNever:
		msg = name + " is not allowed"
	case errType:
		var want []string
		for i := range numTypes {
			if n.types&(1<<uint(i)) != 0 {
				want = append(want, typeName(i))
			}
		}
		msg = name + " must be " + strings.Join(want, " or ")
	case errEnum:
		msg = name + " is not one of the allowed values"
	case errMinLen:
		msg = name + " must be at least " + strconv.Itoa(n.minLen) + " characters"
	case errMaxLen:
		msg = name + " must be at most " + strconv.Itoa(n.maxLen) + " characters"
	case errPattern:
		msg = name + " must match the pattern " + n.patternSrc
	case errFormat:
		msg = name + " must be a valid " + n.formatName
	case errBound:
		op := [...]string{opMin: ">=", opMax: "<=", opExMin: ">", opExMax: "<"}[b.op]
		msg = name + " must be " + op + " " + b.lit
	case errRequired:
		msg = "missing required " + name
	case errUnknown:
		msg = "unknown " + name
	case errMinProps:
		msg = name + " must have at least " + strconv.Itoa(n.minProps) + " properties"
	case errMaxProps:
		msg = name + " must have at most " + strconv.Itoa(n.maxProps) + " properties"
	case errMinItems:
		msg = name + " must have at least " + strconv.Itoa(n.minItems) + " items"
	case errMaxItems:
		msg = name + " must have at most " + strconv.Itoa(n.maxItems) + " items"
	}
	return &failure{Pointer: ptr.String(), Message: msg, kind: k}
}

// keyText is the unescaped text of a raw key.
func keyText(raw []byte, plain bool) string {
	if plain {
		return string(raw)
	}
	return string(decodeString(nil, raw))
}
