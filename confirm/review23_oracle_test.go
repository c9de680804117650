package confirm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/readfold"
	"github.com/mcpguard/mcpguard/internal/textsafe"
)

// This file is a parse-back oracle for Describe: a parser of its output
// grammar, written from the doc comment, that recovers the key/value pairs
// from the text a human reads, and checks them against the arguments (up
// to cuts marked "…" where the doc says a cut happens: 80 characters).
// The parser does not count characters to find where a token ends (a
// person does not either): it tries every reading, and a text that reads
// two ways is a failure of its own. A second, "human" reading folds the
// characters Unicode gives as compatibility equivalents of ASCII (the
// fullwidth forms, the mathematical digits) and a list of quote, comma and
// space shapes to ASCII, and requires the same structure.

const oracleTool = "t"

// oTok is one token of the text, with its byte offsets.
type oTok struct {
	kind       byte // 'b' bare word, 'q' quoted, 'a' quoted and cut (no closing quote), 'n' number, 'l' literal, '~' ≈number, 'N' (a number of …), 'j' JSON, 'J' JSON cut
	raw        string
	start, end int
}

type oPair struct{ key, val oTok }

type oParse struct {
	mode  string // "none", "unreadable", "whole", "pairs"
	whole oTok
	pairs []oPair
	more  int
}

func (p oParse) shape() string {
	var b strings.Builder
	b.WriteString(p.mode)
	for _, x := range p.pairs {
		fmt.Fprintf(&b, "|%c%d-%d=%c%d-%d", x.key.kind, x.key.start, x.key.end, x.val.kind, x.val.start, x.val.end)
	}
	if p.mode == "whole" {
		fmt.Fprintf(&b, "|%c%d-%d", p.whole.kind, p.whole.start, p.whole.end)
	}
	fmt.Fprintf(&b, "|+%d", p.more)
	return b.String()
}

const ellipsis = "…"

func oWordRune(r rune) bool { return textsafe.Word(string(r)) }

// lexBare: the maximal run of Word characters (the grammar puts "=", ", "
// or the end after one, none of which Word takes).
func lexBare(s string, i int) []int {
	j := i
	for j < len(s) {
		r, n := utf8.DecodeRuneInString(s[j:])
		if !oWordRune(r) {
			break
		}
		j += n
	}
	if j == i {
		return nil
	}
	return []int{j}
}

// lexQuoted: a Go-quoted string from s[i] == '"': ends at the first
// unescaped quote, or (cut) just after any "…" before it.
func lexQuoted(s string, i int) (ends []int, cutEnds []int) {
	if i >= len(s) || s[i] != '"' {
		return nil, nil
	}
	j := i + 1
	for j < len(s) {
		switch {
		case s[j] == '"':
			return append(ends, j+1), cutEnds
		case s[j] == '\\':
			if strings.HasPrefix(s[j+1:], ellipsis) { // cut just after the backslash
				return nil, append(cutEnds, j+1+len(ellipsis))
			}
			j += 2
			continue
		case strings.HasPrefix(s[j:], ellipsis):
			cutEnds = append(cutEnds, j+len(ellipsis))
		}
		_, n := utf8.DecodeRuneInString(s[j:])
		j += n
	}
	return nil, cutEnds
}

// lexJSON: compact JSON from s[i] in "[{": ends where its brackets close,
// or (cut) just after any "…".
func lexJSON(s string, i int) (ends []int, cutEnds []int) {
	if i >= len(s) || (s[i] != '[' && s[i] != '{') {
		return nil, nil
	}
	depth, inStr := 0, false
	for j := i; j < len(s); {
		c := s[j]
		if strings.HasPrefix(s[j:], ellipsis) {
			cutEnds = append(cutEnds, j+len(ellipsis))
			j += len(ellipsis)
			continue
		}
		switch {
		case inStr && c == '\\':
			if strings.HasPrefix(s[j+1:], ellipsis) {
				return nil, append(cutEnds, j+1+len(ellipsis))
			}
			j += 2
			continue
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '[' || c == '{'):
			depth++
		case !inStr && (c == ']' || c == '}'):
			depth--
			if depth == 0 {
				return []int{j + 1}, cutEnds
			}
		}
		j++
	}
	return nil, cutEnds
}

func isJSONNumber(s string) bool {
	if s == "" || strings.IndexByte("-0123456789", s[0]) < 0 {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}

func keyTokens(s string, i int) []oTok {
	var out []oTok
	for _, e := range lexBare(s, i) {
		out = append(out, oTok{'b', s[i:e], i, e})
	}
	ends, cuts := lexQuoted(s, i)
	for _, e := range ends {
		out = append(out, oTok{'q', s[i:e], i, e})
	}
	for _, e := range cuts {
		if cutAt(s[i:e]) {
			out = append(out, oTok{'a', s[i:e], i, e})
		}
	}
	return out
}

// cutAt reports whether raw is 80 characters and the cut marker: the
// length a cut leaves. (The parser uses it only for tokens a cut leaves
// open, an escaped text's or a JSON value's, whose long run a person sees.)
func cutAt(raw string) bool {
	p, ok := strings.CutSuffix(raw, ellipsis)
	return ok && utf8.RuneCountInString(p) == oMaxRunes
}

// cutBeforeValue reports whether raw is JSON cut short of 80 characters
// where a value begins (after ":", "[" or ","), and the cut marker: the
// cut before a number (cutBeforeNumber), which the check of the value
// ('J') holds to a number the cut would have ended in.
func cutBeforeValue(raw string) bool {
	p, ok := strings.CutSuffix(raw, ellipsis)
	return ok && utf8.RuneCountInString(p) < oMaxRunes && p != "" && strings.IndexByte(":[,", p[len(p)-1]) >= 0
}

func valueTokens(s string, i int) []oTok {
	var out []oTok
	for _, e := range lexBare(s, i) {
		raw := s[i:e]
		switch {
		case raw == "null" || raw == "true" || raw == "false":
			out = append(out, oTok{'l', raw, i, e})
		case isJSONNumber(raw):
			out = append(out, oTok{'n', raw, i, e})
		default:
			out = append(out, oTok{'b', raw, i, e})
		}
	}
	if strings.HasPrefix(s[i:], "≈") {
		j := i + len("≈")
		for j < len(s) && strings.IndexByte("0123456789.e+-", s[j]) >= 0 {
			j++
		}
		out = append(out, oTok{'~', s[i:j], i, j})
	}
	if strings.HasPrefix(s[i:], "(a number of ") {
		if k := strings.Index(s[i:], " characters)"); k > 0 {
			e := i + k + len(" characters)")
			out = append(out, oTok{'N', s[i:e], i, e})
		}
		if k := strings.Index(s[i:], " characters, in a string)"); k > 0 {
			e := i + k + len(" characters, in a string)")
			out = append(out, oTok{'N', s[i:e], i, e})
		}
	}
	// A long string that spells a number, by its value: "≈1000" (a
	// string shows its ≈ escaped, so this is no string's text).
	numStr := -1
	if strings.HasPrefix(s[i:], `"≈`) {
		j := i + len(`"≈`)
		for j < len(s) && strings.IndexByte("0123456789.e+-", s[j]) >= 0 {
			j++
		}
		if j < len(s) && s[j] == '"' {
			numStr = j + 1
			out = append(out, oTok{'~', s[i:numStr], i, numStr})
		}
	}
	ends, cuts := lexQuoted(s, i)
	for _, e := range ends {
		if e != numStr {
			out = append(out, oTok{'q', s[i:e], i, e})
		}
	}
	for _, e := range cuts {
		if cutAt(s[i:e]) {
			out = append(out, oTok{'a', s[i:e], i, e})
		}
	}
	ends, cuts = lexJSON(s, i)
	for _, e := range ends {
		if json.Valid([]byte(s[i:e])) {
			out = append(out, oTok{'j', s[i:e], i, e})
		}
	}
	for _, e := range cuts {
		if (cutAt(s[i:e]) || cutBeforeValue(s[i:e])) && validJSONPrefix(strings.TrimSuffix(s[i:e], ellipsis)) {
			out = append(out, oTok{'J', s[i:e], i, e})
		}
	}
	return out
}

// validJSONPrefix reports whether s is the start of some JSON text: a
// person reading a cut value still sees where its strings end.
func validJSONPrefix(s string) bool {
	d := json.NewDecoder(strings.NewReader(s))
	for {
		_, err := d.Token()
		var se *json.SyntaxError
		switch {
		case err == nil:
			continue
		case errors.As(err, &se):
			return false
		}
		return true // the end of the text, maybe inside a token
	}
}

// parsePairs returns every reading of s[i:] as pairs, up to limit.
func parsePairs(s string, i int, limit int) [][]oPair {
	var all [][]oPair
	for _, k := range keyTokens(s, i) {
		if !strings.HasPrefix(s[k.end:], "=") {
			continue
		}
		for _, v := range valueTokens(s, k.end+1) {
			p := oPair{k, v}
			switch rest := s[v.end:]; {
			case rest == "":
				all = append(all, []oPair{p})
			case strings.HasPrefix(rest, ", "):
				if m := moreMarker(rest); m >= 0 {
					all = append(all, []oPair{p, {val: oTok{kind: 'M', raw: strconv.Itoa(m)}}})
				}
				for _, tail := range parsePairs(s, v.end+2, limit-len(all)) {
					all = append(all, append([]oPair{p}, tail...))
				}
			}
			if len(all) >= limit {
				return all
			}
		}
	}
	return all
}

// moreMarker reads ", … (N more)" as all of rest, or returns -1.
func moreMarker(rest string) int {
	r, ok := strings.CutPrefix(rest, ", … (")
	if !ok {
		return -1
	}
	r, ok = strings.CutSuffix(r, " more)")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(r)
	if err != nil || n <= 0 || strconv.Itoa(n) != r {
		return -1
	}
	return n
}

// parseDescribe reads Describe's text: its one reading, or an error when
// it has none or more than one.
func parseDescribe(text string) (oParse, error) {
	head := "Run " + oracleTool + " with "
	rest, ok := strings.CutPrefix(text, head)
	if !ok {
		return oParse{}, fmt.Errorf("does not start %q", head)
	}
	off := len(head)
	var all []oParse
	switch rest {
	case "no arguments":
		all = append(all, oParse{mode: "none"})
	case "unreadable arguments":
		all = append(all, oParse{mode: "unreadable"})
	}
	if strings.HasPrefix(rest, "arguments ") {
		for _, v := range valueTokens(text, off+len("arguments ")) {
			if v.end == len(text) {
				all = append(all, oParse{mode: "whole", whole: v})
			}
		}
	}
	for _, ps := range parsePairs(text, off, 4) {
		p := oParse{mode: "pairs"}
		for _, x := range ps {
			if x.val.kind == 'M' {
				p.more, _ = strconv.Atoi(x.val.raw)
				continue
			}
			p.pairs = append(p.pairs, x)
		}
		all = append(all, p)
	}
	switch len(all) {
	case 0:
		return oParse{}, errors.New("no reading")
	case 1:
		return all[0], nil
	}
	var shapes []string
	for _, p := range all {
		shapes = append(shapes, p.shape())
	}
	return oParse{}, fmt.Errorf("%d readings: %v", len(all), shapes)
}

// unquotePartial decodes the Go escapes of a quoted token; when cut, a
// broken escape at its end is dropped.
func unquotePartial(raw string, closed bool) (string, error) {
	s := strings.TrimPrefix(raw, `"`)
	if closed {
		s = strings.TrimSuffix(s, `"`)
	} else {
		s = strings.TrimSuffix(s, ellipsis)
	}
	var b strings.Builder
	for s != "" {
		r, _, tail, err := strconv.UnquoteChar(s, '"')
		if err != nil {
			if !closed && strings.HasPrefix(s, `\`) && len(s) < 10 {
				break // an escape broken by the cut
			}
			return "", fmt.Errorf("bad escape at %q", s)
		}
		b.WriteRune(r)
		s = tail
	}
	return b.String(), nil
}

const oMaxRunes = 80

// checkString checks a key or string value read from tok against want.
func checkString(tok oTok, want string) error {
	var got string
	switch tok.kind {
	case 'b':
		got = tok.raw
	case 'q', 'a':
		var err error
		if got, err = unquotePartial(tok.raw, tok.kind == 'q'); err != nil {
			return err
		}
	case '~', 'N':
		// Spelling a number, too long to show whole: by its value, or
		// by its length, as a number.
		if !isJSONNumber(want) || utf8.RuneCountInString(want) <= oMaxRunes {
			return fmt.Errorf("string %q shown as %c %s", want, tok.kind, tok.raw)
		}
		if tok.kind == 'N' {
			if tok.raw != "(a number of "+strconv.Itoa(len(want))+" characters, in a string)" {
				return fmt.Errorf("%s for a string of a number of %d characters", tok.raw, len(want))
			}
			return nil
		}
		return checkValue(oTok{'~', strings.Trim(tok.raw, `"`), tok.start, tok.end}, json.Number(want))
	default:
		return fmt.Errorf("a string shown as %c %s", tok.kind, tok.raw)
	}
	if isJSONNumber(want) && got != want {
		// Cut like text, 1.000…e3 reads as one.
		return &numberCutError{fmt.Errorf("string of a number %.20s… cut to %s", want, got)}
	}
	if tok.kind == 'a' {
		// Escaped and then cut: the quote and 79 characters of the escaped text.
		if n := utf8.RuneCountInString(tok.raw); n != oMaxRunes+1 {
			return fmt.Errorf("cut escaped text of %d characters", n)
		}
		if !strings.HasPrefix(want, got) { // (equal when only the closing quote was cut)
			return fmt.Errorf("cut %q: not a cut of %+q", got, want)
		}
		return nil
	}
	if got == want {
		return nil
	}
	p, cut := strings.CutSuffix(got, ellipsis)
	if !cut || !strings.HasPrefix(want, p) || utf8.RuneCountInString(p) != oMaxRunes {
		return fmt.Errorf("reads %+q, is %+q", got, want)
	}
	return nil
}

// jsonTokens lists the tokens of v as compact JSON with sorted keys:
// structural characters, strings (decoded) and numbers and literals.
type jTok struct {
	kind byte // 's' string, 'v' number or literal, else the character
	s    string
}

func valueJTokens(v any, out []jTok) []jTok {
	switch x := v.(type) {
	case map[string]any:
		out = append(out, jTok{'{', ""})
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				out = append(out, jTok{',', ""})
			}
			out = append(out, jTok{'s', k}, jTok{':', ""})
			out = valueJTokens(x[k], out)
		}
		return append(out, jTok{'}', ""})
	case []any:
		out = append(out, jTok{'[', ""})
		for i, e := range x {
			if i > 0 {
				out = append(out, jTok{',', ""})
			}
			out = valueJTokens(e, out)
		}
		return append(out, jTok{']', ""})
	case string:
		return append(out, jTok{'s', x})
	case json.Number:
		return append(out, jTok{'v', string(x)})
	case bool:
		return append(out, jTok{'v', strconv.FormatBool(x)})
	case nil:
		return append(out, jTok{'v', "null"})
	}
	panic(fmt.Sprintf("%T", v))
}

// textJTokens tokenizes shown JSON text cut anywhere: the last token may be
// partial (partial reports so).
func textJTokens(s string) (out []jTok, partial bool, err error) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case strings.IndexByte("{}[]:,", c) >= 0:
			out = append(out, jTok{c, ""})
			i++
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) { // cut inside the string
				str, err := jsonPartialString(s[i+1:])
				if err != nil {
					return nil, false, err
				}
				return append(out, jTok{'s', str}), true, nil
			}
			var str string
			if err := json.Unmarshal([]byte(s[i:j+1]), &str); err != nil {
				return nil, false, fmt.Errorf("JSON string %s: %v", s[i:j+1], err)
			}
			out = append(out, jTok{'s', str})
			i = j + 1
		default:
			j := i
			for j < len(s) && strings.IndexByte("{}[]:,\"", s[j]) < 0 {
				j++
			}
			out = append(out, jTok{'v', s[i:j]})
			if j == len(s) {
				return out, true, nil
			}
			i = j
		}
	}
	return out, false, nil
}

// jValueAt reports whether the string all[i] is a value, not a member name.
func jValueAt(all []jTok, i int) bool { return i+1 == len(all) || all[i+1].kind != ':' }

// jsonPartialString decodes the escapes of a JSON string cut before its
// end, dropping an escape (or half a surrogate pair) the cut broke.
func jsonPartialString(s string) (string, error) {
	for cut := len(s); cut >= 0 && cut >= len(s)-12; cut-- {
		var str string
		if json.Unmarshal([]byte(`"`+s[:cut]+`"`), &str) != nil {
			continue
		}
		if i := strings.LastIndex(s[:cut], `\u`); i >= 0 && i == cut-6 {
			if h, err := strconv.ParseUint(s[i+2:cut], 16, 16); err == nil && 0xd800 <= h && h < 0xdc00 {
				str = strings.TrimSuffix(str, "\ufffd") // the first half of a pair
			}
		}
		return str, nil
	}
	return "", fmt.Errorf("JSON string prefix %q", s)
}

// checkValue checks a value token against want.
func checkValue(tok oTok, want any) error {
	switch x := want.(type) {
	case string:
		return checkString(tok, x)
	case json.Number:
		switch tok.kind {
		case 'n':
			if tok.raw != string(x) {
				return fmt.Errorf("number reads %s, is %s", tok.raw, x)
			}
			return nil
		case '~':
			if utf8.RuneCountInString(string(x)) <= oMaxRunes {
				return fmt.Errorf("short number %s shown as %s", x, tok.raw)
			}
			got, _, err1 := big.ParseFloat(strings.TrimPrefix(tok.raw, "≈"), 10, 64, big.ToNearestEven)
			exact, _, err2 := big.ParseFloat(string(x), 10, 64, big.ToNearestEven)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("%s for %.40s: %v %v", tok.raw, x, err1, err2)
			}
			diff := new(big.Float).Sub(got, exact)
			diff.Abs(diff)
			tol := new(big.Float).Abs(exact)
			tol.Mul(tol, big.NewFloat(1e-16))
			if diff.Cmp(tol) > 0 {
				return fmt.Errorf("%s for %.40s…", tok.raw, x)
			}
			return nil
		case 'N':
			if tok.raw != "(a number of "+strconv.Itoa(len(x))+" characters)" {
				return fmt.Errorf("%s for a number of %d characters", tok.raw, len(x))
			}
			return nil
		}
		return fmt.Errorf("number %s shown as %c %s", x, tok.kind, tok.raw)
	case bool, nil:
		if tok.kind != 'l' || tok.raw != fmt.Sprint(x) && !(x == nil && tok.raw == "null") {
			return fmt.Errorf("literal %v shown as %c %s", x, tok.kind, tok.raw)
		}
		return nil
	}
	// An object or array: compact JSON.
	switch tok.kind {
	case 'j':
		var got any
		d := json.NewDecoder(strings.NewReader(tok.raw))
		d.UseNumber()
		if err := d.Decode(&got); err != nil {
			return fmt.Errorf("JSON %s: %v", tok.raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("JSON reads %s", tok.raw)
		}
		return nil
	case 'J':
		shown := strings.TrimSuffix(tok.raw, ellipsis)
		got, partial, err := textJTokens(shown)
		if err != nil {
			return err
		}
		all := valueJTokens(want, nil)
		if len(got) > len(all) {
			return fmt.Errorf("cut JSON %s has more tokens than the value", shown)
		}
		if n := utf8.RuneCountInString(shown); n != oMaxRunes {
			// Cut before a number that the cut would have ended in
			// (cutBeforeNumber): whole tokens, then that number.
			if n > oMaxRunes || partial || len(got) == len(all) {
				return fmt.Errorf("JSON cut after %d characters", n)
			}
			w := all[len(got)]
			switch {
			case w.kind == 's' && isJSONNumber(w.s) && jValueAt(all, len(got)):
				// Or a string value that spells one (with its quotes).
				if n+len(w.s)+2 <= oMaxRunes {
					return fmt.Errorf("JSON cut after %d characters, before %c%q", n, w.kind, w.s)
				}
			case w.kind != 'v' || strings.IndexByte("-0123456789", w.s[0]) < 0 || n+len(w.s) < oMaxRunes:
				return fmt.Errorf("JSON cut after %d characters, before %c%q", n, w.kind, w.s)
			}
		}
		for i, g := range got {
			w := all[i]
			last := i == len(got)-1 && partial
			if g.kind == 'v' && w.kind == 'v' && last && strings.HasPrefix(w.s, g.s) {
				if g.s != w.s && strings.IndexByte("-0123456789", w.s[0]) >= 0 {
					// 1.000…e3 reads as one: Describe shows a long
					// number at the top level by its value for this.
					return &numberCutError{fmt.Errorf("cut JSON %s: number %.20s… cut to %s", shown, w.s, g.s)}
				}
				continue
			}
			if g.kind == 's' && w.kind == 's' && last && strings.HasPrefix(w.s, g.s) {
				if g.s != w.s && isJSONNumber(w.s) && jValueAt(all, i) {
					// So does a string value that spells a number.
					return &numberCutError{fmt.Errorf("cut JSON %s: string of a number %.20s… cut to %s", shown, w.s, g.s)}
				}
				continue
			}
			if g != w {
				return fmt.Errorf("cut JSON %s: token %d reads %c%q, is %c%q", shown, i, g.kind, g.s, w.kind, w.s)
			}
		}
		return nil
	}
	return fmt.Errorf("%T shown as %c %s", want, tok.kind, tok.raw)
}

// oracleDecode decodes args as Describe does, numbers as written.
func oracleDecode(args string) (any, error) {
	if strings.Trim(args, " \t\r\n") == "" {
		return nil, nil
	}
	d := json.NewDecoder(strings.NewReader(args))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

// checkParsesBack is the oracle: the reading of render's text for args
// equals args, up to marked cuts, and the human reading has the same
// structure.
func checkParsesBack(render func(string, json.RawMessage) string, args string) error {
	text := render(oracleTool, json.RawMessage(args))
	p, err := parseDescribe(text)
	if err != nil {
		return fmt.Errorf("%s\n  reads: %v", text, err)
	}
	v, err := oracleDecode(args)
	if err != nil {
		if p.mode != "unreadable" {
			return fmt.Errorf("%s\n  invalid JSON read as %s", text, p.mode)
		}
		return nil
	}
	if err := checkReading(p, v); err != nil {
		return fmt.Errorf("%s\n  %w", text, err)
	}
	if err := checkHuman(text, p); err != nil {
		return fmt.Errorf("%s\n  %w", text, err)
	}
	return nil
}

func checkReading(p oParse, v any) error {
	obj, isObj := v.(map[string]any)
	switch {
	case v == nil || isObj && len(obj) == 0:
		if p.mode != "none" {
			return fmt.Errorf("no arguments read as %s", p.mode)
		}
		return nil
	case !isObj:
		if p.mode != "whole" {
			return fmt.Errorf("a %T read as %s", v, p.mode)
		}
		if err := checkValue(p.whole, v); err != nil {
			return fmt.Errorf("the value: %w", err)
		}
		return nil
	}
	if p.mode != "pairs" {
		return fmt.Errorf("an object read as %s", p.mode)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	shown := min(len(keys), 20)
	if len(p.pairs) != shown || p.more != len(keys)-shown {
		return fmt.Errorf("%d pairs and %d more read, %d keys sent", len(p.pairs), p.more, len(keys))
	}
	for i, x := range p.pairs {
		if err := checkString(x.key, keys[i]); err != nil {
			return fmt.Errorf("key %d: %v", i, err)
		}
		if err := checkValue(x.val, obj[keys[i]]); err != nil {
			return fmt.Errorf("value of %+q: %w", keys[i], err)
		}
	}
	return nil
}

// checkHuman: the text as a person reads it has the strict reading's
// structure (the same tokens, of the same kinds, in the same places).
func checkHuman(text string, p oParse) error {
	h := readfold.Fold(text)
	if h == text {
		return nil
	}
	hp, err := parseDescribe(h)
	if err != nil {
		return fmt.Errorf("a person reads %s\n  which %v", h, err)
	}
	// Compare token kinds and rune offsets (the fold keeps one rune for one).
	if a, b := shapeRunes(text, p), shapeRunes(h, hp); a != b {
		err := fmt.Errorf("a person reads %s\n  as %s, the text is %s", h, b, a)
		if onlyLiterals(a, b) {
			// Only bare strings read as numbers or literals.
			return &compatLiteralError{err}
		}
		return err
	}
	return nil
}

// onlyLiterals reports whether shapes a and b differ only where a has a
// string and b a number or literal.
func onlyLiterals(a, b string) bool {
	as, bs := strings.Split(a, "|"), strings.Split(b, "|")
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if as[i] != bs[i] && !(strings.HasPrefix(as[i], "s") && (strings.HasPrefix(bs[i], "n") || strings.HasPrefix(bs[i], "l")) && as[i][1:] == bs[i][1:]) {
			return false
		}
	}
	return true
}

// compatLiteralError is finding 1 of the report: a string that spells a
// number or literal in fullwidth (or mathematical) digits and letters is
// shown bare, where one in ASCII is quoted.
type compatLiteralError struct{ error }

// numberCutError is finding 2: a long number inside a nested value is cut
// like text, and the cut takes its exponent (or its last digits) away.
type numberCutError struct{ error }

func shapeRunes(s string, p oParse) string {
	pos := func(i int) int { return utf8.RuneCountInString(s[:i]) }
	var b strings.Builder
	b.WriteString(p.mode)
	toks := []oTok{p.whole}
	for _, x := range p.pairs {
		toks = append(toks, x.key, x.val)
	}
	for _, t := range toks {
		k := t.kind
		if k == 'q' || k == 'b' || k == 'a' {
			k = 's' // a string either way
		}
		fmt.Fprintf(&b, "|%c%d-%d", k, pos(t.start), pos(t.end))
	}
	fmt.Fprintf(&b, "|+%d", p.more)
	return b.String()
}

// oracleNasty are the strings of the review tests in confirm and dryrun
// (and a few more): quotes of other scripts, primes, apostrophes in a row,
// fullwidth quotes, bidi controls, combining marks, NUL, lone surrogates
// (as JSON escapes), "=" and ", " in keys and values, the cut marker.
var oracleNasty = []string{
	"", " ", "a", "ok", "x y", "=", ", ", ", amount=1, ", "a=b", "\"", "\\", "'", "''", "``", "'`", "don't",
	"ʺ", "＂", "״", "″", "“", "”", "❞", "˝", "ˮ", "〃", "ײ", "ᐦ", "ᐥ", "ᑊ", "ᛌ", "ǃ", "ꞌ", "٠",
	"\u202e", "\u2066", "\u200b", "\u200d", "\u200e", "\u061c", "\u00ad", "\ufeff", "\u2028", "\u2029",
	"\u0301", "e\u0301", "é", "\u034f", "\ufe0f", "\U000e0100", "\u180b", "\u3164", "\u115f", "\uffa0",
	"\u00a0", "\u2009", "\u3000", "\u2800", "\x00", "\x7f", "\u0085", "\t", "\n", "\r\n",
	"\ufffd", "😀", "…", "a…", "≈1", "(a number of 3 characters)", "… (1 more)",
	"null", "true", "false", "1", "-0", "1e3", "12.5", "1\t", "１２", "ｔｒｕｅ", "𝟏𝟐",
	"próxima entrega", "¿mañana?", "ー", "々", "ๆ", "יי", "\U0001F600", "\ue000",
	"amount", "Amount", "ſ", "K", "[1]", "{\"a\":1}",
	"ﬁ", "ĳ", "fi", "ij", "ℯ", "e", "𝐚", "٣", "3",
}

func oracleRandString(r *rand.Rand) string {
	var b strings.Builder
	n := r.IntN(4)
	if r.IntN(8) == 0 {
		n = 20 + r.IntN(80) // long: cuts
	}
	for range n {
		s := oracleNasty[r.IntN(len(oracleNasty))]
		if r.IntN(3) == 0 {
			s = string(rune('a' + r.IntN(26)))
		}
		b.WriteString(s)
	}
	return b.String()
}

func oracleRandValue(r *rand.Rand, depth int) any {
	switch r.IntN(9) {
	case 0:
		return json.Number(strconv.Itoa(r.IntN(2000) - 1000))
	case 1:
		return json.Number([]string{"12.50", "1e3", "-0", "1.0", "1E+2", "0.1e-2"}[r.IntN(6)])
	case 2:
		if r.IntN(4) == 0 {
			return json.Number("1." + strings.Repeat("0", 70+r.IntN(30)) + "e" + strconv.Itoa(r.IntN(9)))
		}
		return []any{nil, true, false}[r.IntN(3)]
	case 3, 4:
		if depth < 2 {
			if r.IntN(2) == 0 {
				a := make([]any, r.IntN(4))
				for i := range a {
					a[i] = oracleRandValue(r, depth+1)
				}
				return a
			}
			return oracleRandObject(r, depth+1, 3)
		}
	}
	return oracleRandString(r)
}

func oracleRandObject(r *rand.Rand, depth, maxKeys int) map[string]any {
	m := map[string]any{}
	for range r.IntN(maxKeys + 1) {
		m[oracleRandString(r)] = oracleRandValue(r, depth)
	}
	return m
}

// oracleEncode encodes v, its strings' invalid UTF-8 and controls escaped.
func oracleEncode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestReview23DescribeOracleSeeds runs the oracle on each nasty string as
// a key and as a value, in a pair beside others, and nested.
func TestReview23DescribeOracleSeeds(t *testing.T) {
	for _, s := range oracleNasty {
		for _, long := range []string{"", strings.Repeat("x", 78), strings.Repeat("é", 79)} {
			s := long + s + s
			for _, v := range []any{
				map[string]any{"note": s},
				map[string]any{s: json.Number("1"), "amount": json.Number("1")},
				map[string]any{"a": s, "b": "x y", "c": json.Number("2")},
				map[string]any{"v": []any{s, json.Number("1")}},
				map[string]any{"v": map[string]any{s: s}},
				[]any{s},
			} {
				args := oracleEncode(v)
				if !oracleInDomain(args) {
					continue
				}
				if err := checkParsesBack(Describe, args); err != nil {
					t.Errorf("Describe(%s)\n= %v", args, err)
				}
			}
		}
	}
}

// oracleInDomain: arguments the guard shows (ArgsSHA256 takes them).
func oracleInDomain(args string) bool {
	_, err := ArgsSHA256(json.RawMessage(args))
	return err == nil
}

// TestReview23DescribeOracleProperty: random objects of nasty strings,
// numbers, literals and nested values parse back, and no two of them
// (shown without a cut) read the same.
func TestReview23DescribeOracleProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 2026))
	seen, seenByPerson := map[string]string{}, map[string]string{}
	fails := 0
	for i := 0; i < 4000 && fails < 10; i++ {
		maxKeys := 4
		if i%50 == 0 {
			maxKeys = 25 // past the 20-argument limit
		}
		args := oracleEncode(oracleRandObject(r, 0, maxKeys))
		if !oracleInDomain(args) {
			continue
		}
		if err := checkParsesBack(Describe, args); err != nil {
			fails++
			t.Errorf("Describe(%s)\n= %v", args, err)
			continue
		}
		text := Describe(oracleTool, json.RawMessage(args))
		if strings.Contains(text, ellipsis) || strings.Contains(text, "≈") {
			continue // cut or rounded: different arguments may read alike
		}
		c, _ := canonical(json.RawMessage(args))
		if prev, ok := seen[text]; ok && prev != string(c) {
			fails++
			t.Errorf("%s and %s both read\n%s", prev, c, text)
		}
		seen[text] = string(c)
		if prev, ok := seenByPerson[readfold.Read(text)]; ok && prev != string(c) {
			fails++
			t.Errorf("%s and %s both read, to a person,\n%s", prev, c, readfold.Read(text))
		}
		seenByPerson[readfold.Read(text)] = string(c)
	}
}

// FuzzReview23DescribeParsesBack: for every valid JSON object the guard
// shows (ArgsSHA256 takes it), the reading of Describe's text equals the
// arguments, up to marked cuts, and reads the same to a person; and two
// objects, both shown without a cut, never read the same.
func FuzzReview23DescribeParsesBack(f *testing.F) {
	for _, s := range oracleNasty {
		f.Add(oracleEncode(map[string]any{"note": s, s: json.Number("1")}), oracleEncode(map[string]any{"note": s + s}))
	}
	f.Add(`{"note":"ok\u02ba, amount=1, z\u02ba"}`, `{"note":"ok","amount":1,"z":""}`)
	f.Add(`{"a":"1"}`, `{"a":1}`)
	f.Add(`{"a":"x\u200b"}`, `{"a":"x"}`)
	f.Add(`{"note''=1, amount''":1000}`, `{"note":1,"amount":1000}`)
	f.Add(`{"v":[{"note":"gift\u02ba,\u02baqty\u02ba:1}]","qty":1000}]}`, `{"v":[{"note":"gift","qty":1}]}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		ca, erra := canonical(json.RawMessage(a))
		if erra == nil {
			if err := checkParsesBack(Describe, a); err != nil {
				t.Fatalf("Describe(%s)\n= %v", a, err)
			}
		}
		cb, errb := canonical(json.RawMessage(b))
		if erra != nil || errb != nil || string(ca) == string(cb) {
			return
		}
		ta, tb := Describe(oracleTool, json.RawMessage(a)), Describe(oracleTool, json.RawMessage(b))
		if strings.HasSuffix(ta, " with no arguments") {
			return // nothing, null and {}: the same, as documented
		}
		if ta == tb && !strings.Contains(ta, ellipsis) && !strings.Contains(ta, "≈") {
			t.Fatalf("%s and %s both read\n%s", a, b, ta)
		}
		if ha := readfold.Read(ta); ha == readfold.Read(tb) && !strings.Contains(ha, ellipsis) && !strings.Contains(ha, "≈") {
			t.Fatalf("%s and %s both read, to a person,\n%s\n%s", a, b, ta, tb)
		}
	})
}

// The oracle is not lenient: renderers that are ambiguous in the ways
// earlier reviews found fail it.
func TestReview23OracleRejectsAmbiguousRenderers(t *testing.T) {
	bareStrings := func(tool string, args json.RawMessage) string {
		// Strings bare when words, numbers spelt by a string too.
		var m map[string]any
		_ = json.Unmarshal(args, &m)
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		var parts []string
		for _, k := range keys {
			s, ok := m[k].(string)
			if !ok {
				s = fmt.Sprint(m[k])
			}
			if !textsafe.Word(s) {
				s = strconv.Quote(s)
			}
			parts = append(parts, k+"="+s)
		}
		return "Run " + tool + " with " + strings.Join(parts, ", ")
	}
	plainQuote := func(tool string, args json.RawMessage) string {
		// strconv.Quote only: quote shapes of other scripts left bare.
		var m map[string]string
		_ = json.Unmarshal(args, &m)
		var parts []string
		for _, k := range slices.Sorted(mapKeys(m)) {
			parts = append(parts, k+"="+strconv.Quote(m[k]))
		}
		return "Run " + tool + " with " + strings.Join(parts, ", ")
	}
	cleanOnly := func(tool string, args json.RawMessage) string {
		// Hidden characters removed, not shown.
		return strings.ReplaceAll(Describe(tool, args), `\u200b`, "")
	}
	silentCut := func(tool string, args json.RawMessage) string {
		// Cut without the marker.
		return strings.ReplaceAll(Describe(tool, args), "…", "")
	}
	noPairEscape := func(tool string, args json.RawMessage) string {
		return strings.ReplaceAll(Describe(tool, args), `\u0027`, "'")
	}
	for _, tc := range []struct {
		name   string
		render func(string, json.RawMessage) string
		args   string
	}{
		{"number_string_bare", bareStrings, `{"amount":"12"}`},
		{"quote_lookalike", plainQuote, `{"note":"okʺ, amount=1, zʺ"}`},
		{"hidden_removed", cleanOnly, `{"target":"db-1\u200b"}`},
		{"silent_cut", silentCut, `{"note":"` + strings.Repeat("a", 100) + `"}`},
		{"apostrophe_pairs", noPairEscape, `{"note":"ok'', amount=1, z''"}`},
	} {
		if err := checkParsesBack(Describe, tc.args); err != nil {
			t.Errorf("%s: Describe itself fails: %v", tc.name, err)
		}
		err := checkParsesBack(tc.render, tc.args)
		if err == nil {
			t.Errorf("%s: the oracle takes %s", tc.name, tc.render(oracleTool, json.RawMessage(tc.args)))
		} else {
			t.Logf("%s: rejected: %v", tc.name, err)
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestReview23OracleFindingCompatLiterals: a string that spells a number
// or a literal is quoted, so that it does not read as one (amount="12"),
// but only in ASCII: in fullwidth or mathematical digits and letters,
// which Unicode gives as compatibility equivalents of ASCII (NFKC), it is
// shown bare and reads as the number: amount=１２ beside amount=12.
func TestReview23OracleFindingCompatLiterals(t *testing.T) {
	for _, s := range []string{"１２", "𝟏𝟐", "ｔｒｕｅ", "ｎｕｌｌ", "１ｅ３"} {
		args := oracleEncode(map[string]any{"amount": s})
		if err := checkParsesBack(Describe, args); err != nil {
			t.Errorf("Describe(%s)\n= %v", args, err)
		}
	}
}

// TestReview23OracleFindingNestedLongNumber: a long number at the top
// level is shown by its value ("≈1000"), since cut like text 1.000…e3
// reads as one (TestDescribeLongNumberKeepsItsValue); inside an object or
// array it is still cut with the rest of the JSON, and reads as one.
func TestReview23OracleFindingNestedLongNumber(t *testing.T) {
	zeros := strings.Repeat("0", 90)
	for _, args := range []string{
		`{"order":{"amount":1.` + zeros + `e3}}`,
		`{"amounts":[1.` + zeros + `e3]}`,
	} {
		if err := checkParsesBack(Describe, args); err != nil {
			t.Errorf("Describe(%.40s…)\n= %v", args, err)
		}
	}
}

// TestReview23OracleFindingOutsideTheGuard: the guard refuses arguments
// ArgsSHA256 refuses before it asks, but Describe, exported, shows them:
// a lone surrogate as U+FFFD and a member named twice by its last value,
// so they read as other arguments that a downstream reads otherwise.
func TestReview23OracleFindingOutsideTheGuard(t *testing.T) {
	for _, p := range [][2]string{
		{`{"note":"\ud800"}`, `{"note":"\ufffd"}`},
		{`{"a":1,"a":2}`, `{"a":2}`},
	} {
		a, b := Describe(oracleTool, json.RawMessage(p[0])), Describe(oracleTool, json.RawMessage(p[1]))
		if a == b {
			t.Errorf("%s and %s both read %s", p[0], p[1], a)
		}
	}
}
