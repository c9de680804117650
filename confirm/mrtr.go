package confirm

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/textsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// InputKey is the key of the confirmation in a result's InputRequests and in
// the retried request's InputResponses.
const InputKey = "mcpguard.confirm"

// Ask returns the input-required result of the first round: an elicitation
// (form mode, with an empty form: the answer is the action itself) showing
// message, and state as the RequestState the client must echo. It has no
// content, as the multi round-trip requires.
func Ask(message, state string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{
			InputKey: &mcp.ElicitParams{
				Mode:    "form",
				Message: message,
				RequestedSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{},
				},
			},
		},
		RequestState: state,
	}
}

// Answer reads the human's answer to [Ask] from a retried request: "accept",
// "decline" or "cancel", and true. It reports false when p is nil, the
// response is missing or not an elicitation result, or the action is
// anything else. Answer says nothing about the state: verify it with
// [Signer.Verify] first. Tool arguments are never read, so an argument such
// as confirm: true is never approval.
func Answer(p *mcp.CallToolParamsRaw) (action string, ok bool) {
	if p == nil {
		return "", false
	}
	r, _ := p.InputResponses[InputKey].(*mcp.ElicitResult)
	if r == nil {
		return "", false
	}
	switch r.Action {
	case "accept", "decline", "cancel":
		return r.Action, true
	}
	return "", false
}

const (
	maxDescribeKeys  = 20
	maxDescribeRunes = 80
	// maxToolRunes bounds the tool name Describe shows: every name
	// MCP allows (128 characters) and every name mcpguard's Guard
	// serves (1024 bytes) is shown whole.
	maxToolRunes = 1024
)

// Describe states a tool call in words for the human asked to confirm it:
//
//	Run refund with amount=12.5, customer_id=CUST-00001, note="next day"
//
// The text is one line that a CommonMark renderer (with GitHub's
// extensions too: many MCP hosts render an elicitation's message as
// Markdown, raw HTML included) shows as a plain-text client does, character
// for character: no argument name or value makes markup in it. In keys and
// strings (the strings of nested values too) the characters < > & ` [ ] *
// ~, and an underscore that follows no letter or digit (not the one of
// customer_id), are escaped as \u003c and the like, and the escapes \" and
// \\, which Markdown shows as " and \, are written \u0022 and \u005c: a Go
// or JSON reader reads the same text, and a backslash is followed by a
// letter (\n, \u0410) or the "…" of a cut, which Markdown shows as
// written; a key or string that is a plain word but for such an
// underscore (_id) is quoted.
// So no HTML comment or tag, character reference (&quot;, &#x202e;), code
// span, autolink, link, image, emphasis or strikethrough hides, fakes or
// reorders any of the question. The tool name has those characters escaped
// too (but a bracket, only where it would close a link: "](", "]["), and
// every backslash as \u005c. The text of a ToolOptions.Describe (package
// mcpguard), shown instead of this one, is not escaped so.
//
// Top-level argument keys are sorted; strings are shown bare when they are
// plain words and quoted otherwise, with the characters outside ASCII that
// are not letters or digits (quotes, primes and commas of other scripts, and
// letters shaped like them, which would read as the end of the quotes)
// escaped, and so are two or more apostrophes or backticks in a row (a double
// quote's shape); numbers exactly as sent (one longer than 80 characters by
// its value, rounded to 17 significant digits and marked "≈", or, with an
// exponent beyond ±100000000, by its length: "(a number of 94 characters)"),
// and so is a string longer than 80 characters that spells a number, its
// value in quotes ("≈1000", and "and 8 white space characters" when they
// follow it; by its length: (a number of 94 characters, in a string));
// nested objects and arrays as compact JSON with sorted keys (apostrophes in
// a row escaped, and every character outside printable ASCII when a string in
// them holds a character escaped in quotes, or one of those below). A key or
// string that holds control or formatting characters (including bidirectional
// overrides), or characters that show as nothing or as a plain space (Hangul
// fillers, variation selectors, spaces other than U+0020), is shown quoted
// with every character outside printable ASCII escaped; the tool name is
// shown with control and formatting characters removed, whole up to 1024
// characters (MCP allows 128; a longer one is cut with "…"). Each
// key and value is truncated to 80 characters with "…", and at most 20
// arguments are listed.
// Arguments that are empty or null read "with no arguments"; a non-object is
// shown as one value is (cut alike); invalid JSON, and arguments [ArgsSHA256]
// refuses (a member named twice, or two whose names differ only in letter
// case, '_' or '-', at any depth; text that is not UTF-8 or escapes a lone
// surrogate), read "with unreadable arguments". A key or string with
// fullwidth or mathematical letters or digits (ℯ and the other letters of the
// Letterlike Symbols block among them, and ª º ſ), ligatures or digraphs of
// ASCII letters (ﬁ, ĳ, ǳ), or digits of another script, is quoted with those
// escaped (shown as "\uff11\uff12": "１２" would read as the number or the key 12, "proﬁle" as
// profile), and so is one with letters that Unicode's confusables.txt gives
// as shaped like an ASCII letter or digit (Cyrillic А and З, Greek ο,
// Armenian օ, Cherokee Ꭺ, Latin ı) where they read as ASCII: "\u0410cme", not
// Аcme, which reads as Acme. A word (letters and digits) wholly in one other
// script that holds a letter of it shaped like no ASCII one, and that no
// other script with lookalikes can spell alike, is shown as it is
// (city=Москва; not to=ПАР, which reads as Greek ΠΑΡ: "\u041f\u0410\u0420"; a
// letter shaped like ASCII with marks, like two ASCII letters or like ASCII
// punctuation, Cyrillic ё or ꚙ, is not such a letter:
// "\u0421\u04bb\u04cf\u043e\u0451", not Сһӏоё, which reads as Chloë); in a
// word with ASCII letters or digits every letter of a script with such
// letters is escaped, and so is every one in a word of lookalikes only
// ("\u0441\u043e\u0440" for the Russian сор, which reads as cop): see
// textsafe.ReadsASCIIIn. A nested value holding one of these, in the whole of
// it or in the 80 characters shown, is shown with everything outside
// printable ASCII escaped, and one cut in a number, or in a string that
// spells one, is cut before it ({"amount":…).
func Describe(tool string, args json.RawMessage) string {
	var b strings.Builder
	b.WriteString("Run ")
	// Not cut like a value: two tools whose names differ only past 80
	// characters would be asked about in one message.
	b.WriteString(markdownTool(textsafe.Clean(tool, maxToolRunes)))
	v, err := decode(args)
	if err == nil {
		// Arguments that name a member twice, or hold text that decodes
		// to U+FFFD, would read as other arguments (the last value, the
		// replacement character) that a downstream may read otherwise:
		// the guard refuses them before it asks (see ArgsSHA256).
		_, err = ArgsSHA256(args)
	}
	switch {
	case len(bytes.Trim(args, " \t\r\n")) == 0 || (err == nil && v == nil):
		b.WriteString(" with no arguments")
		return b.String()
	case err != nil:
		b.WriteString(" with unreadable arguments")
		return b.String()
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		b.WriteString(" with arguments ")
		b.WriteString(markdownSafe(value(v)))
		return b.String()
	}
	if len(obj) == 0 {
		b.WriteString(" with no arguments")
		return b.String()
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.WriteString(" with ")
	for i, k := range keys {
		if i == maxDescribeKeys {
			b.WriteString(", … (" + strconv.Itoa(len(keys)-maxDescribeKeys) + " more)")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(markdownSafe(text(k)))
		b.WriteByte('=')
		b.WriteString(markdownSafe(value(obj[k])))
	}
	return b.String()
}

// value renders one decoded JSON value for Describe.
func value(v any) string {
	switch x := v.(type) {
	case string:
		if literal(x) && !unseen(x) {
			// Quoted, or it would read as the number or literal it spells
			// ("1\t" is quoted by text with its tab escaped); and when too
			// long to show whole, shown by its value as a number is: cut
			// like text, "1.000…e3" would read as one, and a downstream
			// that reads numbers from strings reads a thousand.
			if utf8.RuneCountInString(x) > maxDescribeRunes {
				return numberString(x)
			}
			return markdownSafe(strconv.Quote(sanitize(x)))
		}
		// Quoted by text too, with what reads as ASCII escaped
		// (textsafe.ReadsASCIIIn), when it may spell one in them ("１２",
		// "1ℯ3", Cyrillic "З").
		return text(x)
	case json.Number:
		return number(x)
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "?"
	}
	js := strings.TrimSuffix(buf.String(), "\n")
	// Two apostrophes in a row read as a quote: escaped too. Their
	// escapes are longer, so what is shown is judged after them: cut
	// earlier, a word may lose its letter of its own script.
	shown := func(js string) string {
		return sanitize(cutBeforeNumber(markdownSafe(textsafe.QuotePairs(js)), maxDescribeRunes))
	}
	if unseen(js) || strings.ContainsFunc(js, textsafe.Shaped) || textsafe.ReadsASCIIIn(js) ||
		textsafe.ReadsASCIIIn(shown(js)) {
		// Strings inside hold characters cleaning would remove, that
		// show as nothing, shaped like a quote or a comma, or read as
		// ASCII (textsafe.ReadsASCIIIn, Аcme), in the whole or in what
		// is shown of it (a word cut before its letter of its own
		// script): show them escaped, as text does for a top-level
		// string.
		js = textsafe.ASCIIJSON(js)
	}
	return shown(js)
}

// cutBeforeNumber returns js, compact JSON, cut before the number, or the
// string value that spells one (see literal), that its first max runes
// would end in, and marked "…": cut like text, a nested 1.000…e3 (a
// thousand) would read as one, and "1000000" as "10…". js fitting in max
// runes, or cut elsewhere, is returned as it is, for sanitize to cut.
func cutBeforeNumber(js string, max int) string {
	if utf8.RuneCountInString(js) <= max {
		return js
	}
	end, n := 0, 0
	for end < len(js) && n < max {
		_, size := utf8.DecodeRuneInString(js[end:])
		end += size
		n++
	}
	start, quote, inString, escaped := -1, -1, false, false
	for i := 0; i < end; i++ {
		c := js[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString, start, quote = true, -1, i
		case strings.IndexByte("-0123456789", c) >= 0:
			if start < 0 {
				start = i
			}
		case strings.IndexByte("+.eE", c) >= 0:
			// In a number (none starts with one), or the e that ends
			// true or false, which the cut leaves whole.
		default:
			start = -1
		}
	}
	if inString && numberValueAt(js, quote) {
		return js[:quote] + "…"
	}
	if inString || start < 0 {
		return js
	}
	return js[:start] + "…"
}

// numberValueAt reports whether the string of js, compact JSON, that opens
// with the quote at js[q] is a value (not a member name) that spells a
// JSON number or literal. Its text is as written in js: encoding/json
// escapes no character a number is written with.
func numberValueAt(js string, q int) bool {
	for i, escaped := q+1, false; i < len(js); i++ {
		switch c := js[i]; {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			return literal(js[q+1:i]) && (i+1 == len(js) || js[i+1] != ':')
		}
	}
	return false
}

// numberString renders s, a string longer than maxDescribeRunes that spells
// a JSON number, as [number] renders a number, in quotes: "≈1000" (a
// string shows its ≈ escaped, so none reads so), or, with an exponent
// beyond ±maxShownExp, by its length.
func numberString(s string) string {
	// literal takes JSON's white space after the number (json.Valid does);
	// a reader that trims it reads the number before it.
	t := strings.TrimRight(s, " \t\r\n")
	if v, ok := roundNumber(t); ok {
		if n := len(s) - len(t); n > 0 {
			return `"≈` + v + `" and ` + strconv.Itoa(n) + ` white space characters`
		}
		return `"≈` + v + `"`
	}
	return "(a number of " + strconv.Itoa(len(s)) + " characters, in a string)"
}

// literal reports whether s, shown bare, would read as a JSON literal or
// number: "null", "true", "false", "12.5".
func literal(s string) bool {
	switch s {
	case "null", "true", "false":
		return true
	}
	return s != "" && strings.IndexByte("-0123456789", s[0]) >= 0 && json.Valid([]byte(s))
}

// number renders a number exactly as sent, or, when it is too long to
// show whole, by its value rounded to 17 significant digits and marked
// "≈" (cut like a string, 1.000…e3 would read as one), or, with an
// exponent beyond ±maxShownExp, by its length.
func number(n json.Number) string {
	s := string(n)
	if utf8.RuneCountInString(s) <= maxDescribeRunes {
		return s
	}
	if v, ok := roundNumber(s); ok {
		return "≈" + v
	}
	return "(a number of " + strconv.Itoa(len(s)) + " characters)"
}

// maxShownExp bounds the decimal exponent of a number [number] shows by its
// value.
const maxShownExp = 100_000_000

// roundNumber returns s, a JSON number, rounded to 17 significant digits
// (half to even) and written as big.Float's Text('g', 17) writes it, in
// time linear in its length: math/big's conversions take time quadratic
// in the digits, and Text in the exponent (seconds for 1e-60000). It
// reports false when the exponent it would show is beyond ±maxShownExp, or
// when s's exponent is written with more than nine digits.
func roundNumber(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e := strings.TrimLeft(strings.TrimLeft(s[i+1:], "+-"), "0")
		if len(e) > 9 {
			return "", false
		}
		exp, _ = strconv.Atoi(e)
		if strings.HasPrefix(s[i+1:], "-") {
			exp = -exp
		}
		s = s[:i]
	}
	whole, frac, _ := strings.Cut(s, ".")
	// The value is 0.d × 10^point, d the significant digits.
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		if neg {
			return "-0", true
		}
		return "0", true
	}
	point := exp + len(digits) - len(frac)
	var d []byte
	if len(digits) <= 17 {
		d = []byte(digits)
	} else {
		d = []byte(digits[:17])
		rest := digits[17:]
		up := rest[0] > '5' || rest[0] == '5' && (strings.TrimRight(rest[1:], "0") != "" || d[16]&1 == 1)
		for i := 16; up && i >= 0; i-- {
			if d[i] < '9' {
				d[i]++
				up = false
			} else {
				d[i] = '0'
			}
		}
		if up { // 99…9 rounded up
			d = append([]byte{'1'}, d[:16]...)
			point++
		}
	}
	for len(d) > 1 && d[len(d)-1] == '0' {
		d = d[:len(d)-1]
	}
	if e := point - 1; e > maxShownExp || e < -maxShownExp {
		return "", false
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	switch e := point - 1; {
	case e < -4 || e >= 17:
		// As %e: d.ddde±dd.
		b.WriteByte(d[0])
		if len(d) > 1 {
			b.WriteByte('.')
			b.Write(d[1:])
		}
		sign := "e+"
		if e < 0 {
			sign, e = "e-", -e
		}
		b.WriteString(sign)
		if e < 10 {
			b.WriteByte('0')
		}
		b.WriteString(strconv.Itoa(e))
	case point <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -point))
		b.Write(d)
	case point >= len(d):
		b.Write(d)
		b.WriteString(strings.Repeat("0", point-len(d)))
	default:
		b.Write(d[:point])
		b.WriteByte('.')
		b.Write(d[point:])
	}
	return b.String(), true
}

// unseen reports whether s holds characters that cleaning would remove
// (controls, formatting) or that show as nothing or as a plain space:
// default-ignorable letters and marks (Hangul fillers, the combining
// grapheme joiner), variation selectors, the blank Braille pattern, and
// spaces other than U+0020.
func unseen(s string) bool {
	if textsafe.Clean(s, math.MaxInt) != s {
		return true
	}
	return strings.ContainsFunc(s, func(r rune) bool {
		return r == '\u2800' || (r != ' ' && unicode.Is(unicode.Zs, r)) ||
			unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
	})
}

// Quote quotes s, text a model chose, for a question a human reads, as
// [Describe] quotes an argument's string (uncut): a quote of another
// script, apostrophes in a row, a character that shows as nothing or reads
// as an ASCII letter or digit are escaped, so that s cannot seem to end
// before it does or to say what it does not; and the characters with which
// Markdown makes markup are escaped as Describe's are, so that a host that
// renders the question as Markdown shows s as it reads. For a
// ToolOptions.Describe (package mcpguard) that quotes model text.
func Quote(s string) string {
	switch {
	case unseen(s):
		return markdownSafe(textsafe.QuotePairs(strconv.QuoteToASCII(s)))
	case textsafe.ReadsASCIIIn(s):
		return markdownSafe(textsafe.QuoteASCIIShaped(s))
	}
	return markdownSafe(textsafe.QuoteShaped(s))
}

// text renders a key or a string value: bare when plain, else quoted, and
// cut when long. When it holds characters that cleaning would remove or
// that show as nothing (see unseen), it is quoted with everything but
// printable ASCII escaped, so that two different texts never read the same.
// Characters that read as ASCII letters or digits where they stand
// (textsafe.ReadsASCIIIn: fullwidth, mathematical, other scripts' digits
// and lookalike letters) are quoted and escaped too ("\uff11\uff12", not
// "１２", which reads as "12"; "\u0410cme", not Аcme).
// Either way apostrophes in a row (which read as a quote) are escaped.
func text(s string) string {
	if unseen(s) {
		return sanitize(markdownSafe(textsafe.QuotePairs(strconv.QuoteToASCII(s))))
	}
	c := sanitize(s) // cut when long
	if !textsafe.ReadsASCIIIn(c) {
		if textsafe.Word(c) && markdownSafe(c) == c {
			// Bare, but not a word with an underscore after no letter
			// or digit (_id), which Markdown could read as emphasis:
			// quoted, and escaped in the quotes (see markdownSafe).
			return c
		}
		return markdownSafe(textsafe.QuoteShaped(c))
	}
	return markdownSafe(textsafe.QuoteASCIIShaped(c))
}

// sanitize removes control and formatting characters and invalid UTF-8, and
// truncates to maxDescribeRunes runes.
func sanitize(s string) string { return textsafe.Clean(s, maxDescribeRunes) }

// markdownEscapes are the ASCII characters markdownSafe writes as escapes:
// those with which CommonMark (and GitHub's strikethrough) makes markup
// inline: raw HTML and autolinks (<, and > with them), entity and numeric
// character references (&), code spans (`), links and images ([ ]),
// emphasis (*, and a _ that follows no letter or digit) and
// strikethrough (~).
const markdownEscapes = "<>&`[]*~_"

// markdownSafe returns piece, one rendered key or value of Describe (a
// bare word, a number, Go-quoted text, compact JSON, possibly cut with
// "…"), with nothing a CommonMark renderer reads as markup, and the same
// text to a Go or JSON reader: in its strings (between quotes) the
// characters of markdownEscapes are written as \u003c and the like (an
// underscore only where it follows no letter or digit: in customer_id
// it is inert), and the escapes \" and \\, which a Markdown renderer
// shows as " and \ (so that a value's \" would read as its end), as
// \u0022 and \u005c. A backslash it leaves is followed by a letter (\n,
// \x00, \u0410), which CommonMark shows as written, or by the "…" of a
// cut. Outside strings (JSON's structure, numbers, a bare word) it escapes
// the same characters but JSON's brackets, which make no link there: a
// "](" or "][" needs a bracket of a string, escaped. So Describe's text
// renders as it reads. A bare word it would change is not shown bare (see
// text).
func markdownSafe(piece string) string {
	if !strings.ContainsAny(piece, markdownEscapes+"\\") {
		return piece
	}
	var b strings.Builder
	inString := false
	for i := 0; i < len(piece); i++ {
		c := piece[i]
		switch {
		case c == '"':
			inString = !inString
			b.WriteByte(c)
		case c == '\\' && i+1 < len(piece) && (piece[i+1] == '"' || piece[i+1] == '\\'):
			writeEscape(&b, piece[i+1])
			i++
		case c == '\\' && i+1 < len(piece):
			// \n, \x00, \u0410, or \ before the "…" of a cut: shown
			// as written.
			b.WriteByte(c)
			b.WriteByte(piece[i+1])
			i++
		case c == '\\':
			// None ends a piece; one would escape what follows it.
			writeEscape(&b, c)
		case (c == '[' || c == ']') && !inString:
			b.WriteByte(c)
		case c == '_' && afterWordRune(piece, i):
			b.WriteByte(c)
		case strings.IndexByte(markdownEscapes, c) >= 0:
			writeEscape(&b, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// markdownTool returns tool, a cleaned tool name shown as it is, with the
// characters of markdownEscapes escaped as markdownSafe escapes them, and
// every backslash (the name is not quoted: none starts an escape) as
// \u005c; but a bracket only as "](" or "][", which a link needs (one
// reference definition, which alone makes "[x]" a link, needs a line of
// its own: Describe writes one line).
func markdownTool(tool string) string {
	if !strings.ContainsAny(tool, markdownEscapes+"\\") {
		return tool
	}
	var b strings.Builder
	for i := 0; i < len(tool); i++ {
		switch c := tool[i]; {
		case c == '_' && afterWordRune(tool, i), c == '[',
			c == ']' && (i+1 == len(tool) || tool[i+1] != '(' && tool[i+1] != '['):
			b.WriteByte(c)
		case c == '\\' || strings.IndexByte(markdownEscapes, c) >= 0:
			writeEscape(&b, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// afterWordRune reports whether the underscore at s[i] follows a letter
// or a digit: by CommonMark's flanking rules such an underscore (in
// customer_id, or ending a word) cannot open emphasis, and without one
// that opens, none closes. A cut ("…") after it does not change that.
func afterWordRune(s string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return i > 0 && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// writeEscape writes the ASCII character c as \u00XX.
func writeEscape(b *strings.Builder, c byte) {
	const hex = "0123456789abcdef"
	b.WriteString(`\u00`)
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&15])
}
