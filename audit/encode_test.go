package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/internal/foldkey"
	"github.com/mcpguard/mcpguard/internal/textsafe"
)

// tricky strings exercise every escaping rule of encoding/json.
var tricky = []string{
	"",
	"plain ascii",
	"<script>alert('x')</script> & more",
	"quote \" backslash \\ slash /",
	"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f",
	"line\u2028sep\u2029para",
	"é 日本語 🎉 \U0010FFFF",
	"bad utf8 \xff\xfe mid \xc3 end \xe2\x82",
	"\ufffd already",
}

func richEvent(s string) *Event {
	return &Event{
		Time:          time.Date(2026, 7, 28, 1, 2, 3, 4, time.FixedZone("", -(3*3600+30*60))),
		CorrelationID: s, SessionID: s, Subject: s, Roles: []string{s, "admin"}, Tool: s, Class: s,
		Phase: Phase(s), Allowed: true, DryRun: true, Code: s, Detail: s, LatencyMS: 12.5,
		ArgsSHA256: s, Cost: 3, ProtocolVersion: s, ClientName: s,
		Args: map[string]any{s: s, "n": 1.5, "i": 7, "i64": int64(-9), "u": uint64(1 << 63), "b": false,
			"nil": nil, "list": []any{s, 1e21, map[string]any{"z": s, "a": []string{s}}}, "strs": []string{s},
			"raw": json.RawMessage(`{"b": 1, "a":"<"}`), "num": json.Number("12.50"), "f32": float32(0.1)},
	}
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	var events []*Event
	for _, s := range tricky {
		events = append(events, richEvent(s))
	}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.99e-7, 1e-7, 123456789.125, 1e20, 1e21, 1.5e300, 5e-324, math.MaxFloat64}
	for _, f := range floats {
		events = append(events, &Event{Time: time.Unix(0, 0).UTC(), CorrelationID: "f", Phase: PhaseOutcome, LatencyMS: f, Cost: f})
	}
	events = append(events,
		&Event{},
		&Event{Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), Roles: []string{}, Args: map[string]any{}},
		&Event{Time: time.Date(0, 1, 1, 0, 0, 0, 0, time.FixedZone("", 23*3600+59*60))},
	)
	for i, e := range events {
		want, err := json.Marshal(plainEvent(*e))
		if err != nil {
			t.Fatalf("event %d: encoding/json: %v", i, err)
		}
		got, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatalf("event %d: AppendJSON: %v", i, err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("event %d: AppendJSON differs from encoding/json\nwant %s\ngot  %s", i, want, got)
		}
		viaMarshal, err := json.Marshal(e)
		if err != nil || !bytes.Equal(viaMarshal, want) {
			t.Errorf("event %d: json.Marshal(*Event) = %s, %v; want %s", i, viaMarshal, err, want)
		}
	}
}

func TestAppendJSONRejectsWhatEncodingJSONRejects(t *testing.T) {
	tests := []struct {
		name string
		e    Event
	}{
		{"nan_latency", Event{LatencyMS: math.NaN()}},
		{"inf_cost", Event{Cost: math.Inf(1)}},
		{"year_10000", Event{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"year_negative", Event{Time: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"offset_24h", Event{Time: time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600))}},
		{"nan_in_args", Event{Args: map[string]any{"x": math.NaN()}}},
		{"unencodable_args", Event{Args: map[string]any{"c": make(chan int)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := json.Marshal(plainEvent(tt.e)); err == nil {
				t.Fatalf("encoding/json accepted the event; the test is wrong")
			}
			if _, err := tt.e.AppendJSON(nil); !errors.Is(err, ErrInvalidEvent) {
				t.Errorf("AppendJSON error = %v, want ErrInvalidEvent", err)
			}
		})
	}
}

func TestAppendJSONDoesNotAllocate(t *testing.T) {
	e := richEvent("detail <with> \"escapes\" é")
	e.Args = nil
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(1000, func() {
		var err error
		buf, err = e.AppendJSON(buf[:0])
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendJSON allocates %v times per event, want 0", allocs)
	}
}

func TestReadJSONLRoundTripsEncoding(t *testing.T) {
	for _, s := range tricky {
		if strings.ContainsRune(s, 0xFFFD) || !isValidUTF8(s) {
			continue // replaced on encoding; covered by the comparison with encoding/json
		}
		e := richEvent(s)
		e.Phase = PhaseOutcome
		e.CorrelationID = "c"
		e.Args = map[string]any{"k": s, "n": 1.5, "l": []any{s, true, nil}}
		line, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []Event
		for ev, err := range ReadJSONL(bytes.NewReader(append(line, '\n'))) {
			if err != nil {
				t.Fatalf("ReadJSONL(%q): %v", s, err)
			}
			got = append(got, ev)
		}
		if diff := cmp.Diff([]Event{*e}, got); diff != "" {
			t.Errorf("round trip of %q (-want +got):\n%s", s, diff)
		}
	}
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "?") == s }

func TestArgsSHA256(t *testing.T) {
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"empty", ``, ""},
		{"null", ` null `, ""},
		{"sorted_compact", `{"a":1,"b":[true,null]}`, hash(`{"a":1,"b":[true,null]}`)},
		{"keys_sorted_whitespace_removed", " {\n \"b\" : [ true , null ] ,\t\"a\":1 }\n", hash(`{"a":1,"b":[true,null]}`)},
		{"nested_objects_sorted", `{"z":{"y":1,"x":{"b":2,"a":3}},"a":[{"d":4,"c":5}]}`, hash(`{"a":[{"c":5,"d":4}],"z":{"x":{"a":3,"b":2},"y":1}}`)},
		{"numbers_as_given", `{"amount":1.50,"e":1E+2,"neg":-0}`, hash(`{"amount":1.50,"e":1E+2,"neg":-0}`)},
		{"escapes_normalised", `{"s":"\u0041\/\u00e9<\ud83c\udf89"}`, hash(`{"s":"A/é\u003c🎉"}`)},
		{"escaped_key_sorts_decoded", `{"b":1,"\u0061":2}`, hash(`{"a":2,"b":1}`)},
		{"lone_surrogate_kept_escaped", `"\uD800x"`, hash(`"\ud800x"`)},
		{"invalid_json_hashes_raw", `{"a":`, hash(`{"a":`)},
		{"trailing_garbage_hashes_raw", `{} {}`, hash(`{} {}`)},
		{"bad_number_hashes_raw", `{"a":01}`, hash(`{"a":01}`)},
		{"control_char_in_string_hashes_raw", "\"a\x01\"", hash("\"a\x01\"")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ArgsSHA256(json.RawMessage(tt.raw)); got != tt.want {
				t.Errorf("ArgsSHA256(%q) = %q, want %q", tt.raw, got, tt.want)
			}
			if got := AppendArgsSHA256([]byte("prefix:"), json.RawMessage(tt.raw)); string(got) != "prefix:"+tt.want {
				t.Errorf("AppendArgsSHA256(prefix, %q) = %q, want the prefix and %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestArgsSHA256CanonicalIsValidJSON(t *testing.T) {
	for _, raw := range []string{`{"b":{"d":[1,2,{"f":"<&>","e":"\n"}],"c":null},"a":"x"}`, `[]`, `{}`, `"s"`, `[[],{}]`} {
		canon, ok := appendCanonical(nil, []byte(raw))
		if !ok {
			t.Fatalf("appendCanonical(%s) failed", raw)
		}
		var a, b any
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(canon, &b); err != nil {
			t.Fatalf("canonical form %s is not JSON: %v", canon, err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("canonical form of %s changed the value (-want +got):\n%s", raw, diff)
		}
		// Canonical form of a decoded-and-re-encoded value (encoding/json sorts map keys).
		reenc, _ := json.Marshal(a)
		if !bytes.Equal(reenc, canon) {
			t.Errorf("canonical %s, encoding/json %s", canon, reenc)
		}
	}
}

func FuzzAppendJSON(f *testing.F) {
	for _, s := range tricky {
		f.Add(s, 1.5)
	}
	f.Fuzz(func(t *testing.T, s string, x float64) {
		e := richEvent(s)
		e.LatencyMS = x
		want, werr := json.Marshal(plainEvent(*e))
		got, gerr := e.AppendJSON(nil)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("errors differ: encoding/json %v, AppendJSON %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(want, got) {
			t.Fatalf("want %s\ngot  %s", want, got)
		}
	})
}

// TestAppendFloatMatchesEncodingJSON covers the fast path for values with
// at most three decimals and its edges against encoding/json.
func TestAppendFloatMatchesEncodingJSON(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.001, -0.001, 0.1, 0.3, 1.5, 12.5, 0.0005, 0.0015,
		1e-6, 1e-7, 123456789012.345, 999999999999.999, 1e12, 1e15, 1e21, 1e20, -1e20, 0.1 + 0.2, 1.0 / 3,
		float64(1<<53) / 1000, 4503599627370.497, math.MaxInt64, math.SmallestNonzeroFloat64, math.MaxFloat64}
	for n := int64(-3000); n <= 3000; n++ {
		vals = append(vals, float64(n)/1000, float64(n)/100, float64(n)*1.0001)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		vals = append(vals, float64(r.Int64N(2e15)-1e15)/1000, r.NormFloat64()*1e6, math.Float64frombits(r.Uint64()))
	}
	for _, f := range vals {
		want, err := json.Marshal(f)
		got, ok := appendFloat(nil, f)
		if err != nil {
			if ok {
				t.Errorf("appendFloat(%v) = %s, encoding/json refuses it", f, got)
			}
			continue
		}
		if !ok || string(got) != string(want) {
			t.Errorf("appendFloat(%v) = %s, %v; encoding/json: %s", f, got, ok, want)
		}
	}
}

// FuzzCanonical checks the canonical form of arguments against
// encoding/json: a JSON value without duplicate keys, decoded with UseNumber
// and re-encoded (map keys sorted, numbers as given, strings re-escaped), is
// byte-equal to appendCanonical's output (for valid UTF-8), which also
// accepts exactly what json.Valid accepts.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":{"d":[1,2,{"f":"<&>","e":"\n"}],"c":null},"a":"x"}`, `[]`, `{}`, `"s"`, `[[],{}]`,
		" {\n \"b\" : [ true , null ] ,\t\"a\":1 }\n", `{"s":"\u0041\/\u00e9<\ud83c\udf89"}`, `{"b":1,"\u0061":2}`, `"\ud800x"`,
		`{"a":`, `{} {}`, `{"a":01}`, `{"amount":1.50,"e":1E+2,"neg":-0}`, `{"a":{"a":{"a":[{"b":1,"a":2}]}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// AppendArgsSHA256 builds the canonical form in dst's spare
		// capacity: whether it fits or not, the hash is ArgsSHA256's.
		sum := ArgsSHA256(json.RawMessage(raw))
		for _, capacity := range []int{2, 70, 300} {
			dst := append(make([]byte, 0, capacity), "ab"...)
			if got := AppendArgsSHA256(dst, json.RawMessage(raw)); string(got) != "ab"+sum {
				t.Fatalf("AppendArgsSHA256(cap %d, %q) = %q, want \"ab\" and %q", capacity, raw, got, sum)
			}
		}
		got, ok := appendCanonical(make([]byte, 0, 8), []byte(raw))
		if valid := json.Valid([]byte(raw)); ok != valid {
			t.Fatalf("appendCanonical(%q) ok = %v, json.Valid = %v", raw, ok, valid)
		}
		// Invalid UTF-8 is replaced by an escaped U+FFFD where encoding/json,
		// decoding first, writes the character itself: both fine, not equal.
		// An escaped lone surrogate stays escaped where encoding/json reads
		// U+FFFD (see appendLoneString).
		if !ok || hasDuplicateKeys(raw) || !utf8.ValidString(raw) || textsafe.JSONReplaced([]byte(raw)) {
			return
		}
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("appendCanonical(%q)\n got %s\nwant %s", raw, got, want)
		}
	})
}

// hasDuplicateKeys reports whether an object of the valid JSON text raw
// repeats a (decoded) key, or has two keys that fold alike (which the
// canonical form orders apart from encoding/json: see foldOrder).
func hasDuplicateKeys(raw string) bool {
	dec := json.NewDecoder(strings.NewReader(raw))
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next token of an object is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			top := &stack[n-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				continue
			}
			if top.key {
				k := string(foldkey.Append(nil, []byte(tok.(string))))
				if top.keys[k] {
					return true
				}
				top.keys[k] = true
				top.key = false
				continue
			}
			top.key = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{keys: map[string]bool{}, object: true, key: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}
