package audit

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/mcpguard/mcpguard/internal/jsonstr"
)

// AppendJSON appends the JSON encoding of e to dst, byte for byte what
// encoding/json would produce for the same struct (HTML characters, U+2028 and
// U+2029 escaped as \u003c, \u2028, ...; invalid UTF-8 as \ufffd), without
// reflection or allocation (except for Args, which may use encoding/json for
// values other than JSON-like scalars, slices and maps). It returns
// [ErrInvalidEvent] for a NaN or infinite number or a time encoding/json
// cannot encode.
func (e *Event) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"time":"`...)
	n0 := len(dst)
	t := e.Time
	if _, off := t.Zone(); off%60 != 0 {
		// RFC 3339 offsets have no seconds: time would drop them and
		// shift the instant (a historical local mean time, say).
		t = t.UTC()
	}
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	if !strictRFC3339(dst[n0:]) {
		return dst, ErrInvalidEvent
	}
	dst = append(dst, `","correlation_id":`...)
	dst = appendString(dst, e.CorrelationID)
	dst = appendField(dst, `,"parent_id":`, e.ParentID)
	dst = appendField(dst, `,"request_id":`, e.RequestID)
	dst = appendField(dst, `,"session_id":`, e.SessionID)
	dst = appendField(dst, `,"subject":`, e.Subject)
	if len(e.Roles) > 0 {
		dst = append(dst, `,"roles":[`...)
		for i, r := range e.Roles {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, r)
		}
		dst = append(dst, ']')
	}
	dst = appendField(dst, `,"tool":`, e.Tool)
	dst = appendField(dst, `,"class":`, e.Class)
	dst = append(dst, `,"phase":`...)
	dst = appendString(dst, string(e.Phase))
	dst = append(dst, `,"allowed":`...)
	dst = strconv.AppendBool(dst, e.Allowed)
	dst = append(dst, `,"dry_run":`...)
	dst = strconv.AppendBool(dst, e.DryRun)
	dst = appendField(dst, `,"code":`, e.Code)
	dst = appendField(dst, `,"detail":`, e.Detail)
	dst = append(dst, `,"latency_ms":`...)
	var ok bool
	if dst, ok = appendFloat(dst, e.LatencyMS); !ok {
		return dst, ErrInvalidEvent
	}
	dst = appendField(dst, `,"args_sha256":`, e.ArgsSHA256)
	if e.Cost != 0 {
		dst = append(dst, `,"cost":`...)
		if dst, ok = appendFloat(dst, e.Cost); !ok {
			return dst, ErrInvalidEvent
		}
	}
	dst = appendField(dst, `,"protocol_version":`, e.ProtocolVersion)
	dst = appendField(dst, `,"client_name":`, e.ClientName)
	if len(e.Args) > 0 {
		dst = append(dst, `,"args":`...)
		if dst, ok = appendAny(dst, e.Args, 0); !ok {
			return dst, ErrInvalidEvent
		}
	}
	return append(dst, '}'), nil
}

// MarshalJSON returns the encoding of [Event.AppendJSON].
func (e *Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 256))
}

// strictRFC3339 reports whether b (RFC 3339 as formatted by time) is what
// time.Time.MarshalJSON accepts: a four-digit year and an offset under 24h.
func strictRFC3339(b []byte) bool {
	if len(b) < len("2006-01-02T15:04:05Z") || b[4] != '-' {
		return false
	}
	if b[len(b)-1] == 'Z' {
		return true
	}
	c := b[len(b)-len("Z07:00")]
	h := b[len(b)-len("07:00"):]
	return (c == '+' || c == '-') && 10*(h[0]-'0')+(h[1]-'0') < 24
}

func appendField(dst []byte, name, v string) []byte {
	if v == "" {
		return dst
	}
	dst = append(dst, name...)
	return appendString(dst, v)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string escaped exactly like encoding/json
// with HTML escaping on.
func appendString(dst []byte, s string) []byte { return jsonstr.Append(dst, s, true) }

// appendFloat appends f as encoding/json does (ES6 number formatting).
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	// Fast path for a value with at most three decimals and fifteen
	// significant digits (latencies in milliseconds, most costs): f is
	// then the double nearest that decimal, no other decimal of fifteen
	// digits or fewer has the same nearest double, so the decimal itself
	// is the shortest representation that round-trips, which is what
	// strconv would print.
	if m := f * 1000; m > -1e15 && m < 1e15 {
		if n := int64(math.Round(m)); float64(n)/1000 == f && (n != 0 || !math.Signbit(f)) {
			return appendMilli(dst, n), true
		}
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// appendMilli appends n/1000 in decimal without trailing zeros.
func appendMilli(dst []byte, n int64) []byte {
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	dst = strconv.AppendInt(dst, n/1000, 10)
	frac := n % 1000
	if frac == 0 {
		return dst
	}
	digits := [4]byte{'.', byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	end := 4
	for digits[end-1] == '0' {
		end--
	}
	return append(dst, digits[:end]...)
}

const maxDepth = 1000

// appendAny appends v as encoding/json would. JSON-like values are encoded by
// hand; anything else goes through encoding/json.
func appendAny(dst []byte, v any, depth int) ([]byte, bool) {
	if depth > maxDepth {
		return dst, false
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendString(dst, v), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case float64:
		return appendFloat(dst, v)
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), true
	case uint64:
		return strconv.AppendUint(dst, v, 10), true
	case []string:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, s := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, s)
		}
		return append(dst, ']'), true
	case []any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, x := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendAny(dst, x, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendAny(dst, v[k], depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return dst, false
		}
		return append(dst, b...), true
	}
}
