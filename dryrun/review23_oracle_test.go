package dryrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/internal/readfold"
	"github.com/mcpguard/mcpguard/internal/textsafe"
)

// A parse-back oracle for Summary (see confirm's review23_oracle_test.go
// for Describe's): a parser of its grammar, written from the doc comment,
// recovers the argument names from the text and checks them against the
// arguments' keys, up to cuts marked "…" (64 characters), and a "human"
// reading that folds quote, comma and space shapes and the compatibility
// forms of ASCII to ASCII must find the same names in the same places.

const (
	sOracleTool = "t"
	sEllipsis   = "…"
	sMaxRunes   = 64
)

type sTok struct {
	kind       byte // 'b' bare, 'q' quoted, 'a' quoted and cut (no closing quote)
	raw        string
	start, end int
}

func sWordRune(r rune) bool { return textsafe.Word(string(r)) }

func sNameTokens(s string, i int) []sTok {
	var out []sTok
	j := i
	for j < len(s) {
		r, n := utf8.DecodeRuneInString(s[j:])
		if !sWordRune(r) {
			break
		}
		j += n
	}
	if j > i {
		out = append(out, sTok{'b', s[i:j], i, j})
	}
	if i >= len(s) || s[i] != '"' {
		return out
	}
	cut := func(e int) {
		// Escaped, then cut: the quote and 63 characters, a person sees a long run.
		if p, ok := strings.CutSuffix(s[i:e], sEllipsis); ok && utf8.RuneCountInString(p) == sMaxRunes {
			out = append(out, sTok{'a', s[i:e], i, e})
		}
	}
	for j = i + 1; j < len(s); {
		switch {
		case s[j] == '"':
			return append(out, sTok{'q', s[i : j+1], i, j + 1})
		case s[j] == '\\':
			if strings.HasPrefix(s[j+1:], sEllipsis) {
				cut(j + 1 + len(sEllipsis))
				return out
			}
			j += 2
			continue
		case strings.HasPrefix(s[j:], sEllipsis):
			cut(j + len(sEllipsis))
		}
		_, n := utf8.DecodeRuneInString(s[j:])
		j += n
	}
	return out
}

// sParseNames returns every reading of s[i:] as names (and a "more"
// count), up to limit.
func sParseNames(s string, i, limit int) [][]sTok {
	var all [][]sTok
	for _, t := range sNameTokens(s, i) {
		switch rest := s[t.end:]; {
		case rest == "":
			all = append(all, []sTok{t})
		case strings.HasPrefix(rest, ", "):
			if r, ok := strings.CutPrefix(rest, ", … ("); ok {
				if n, ok := strings.CutSuffix(r, " more)"); ok {
					if k, err := strconv.Atoi(n); err == nil && k > 0 && strconv.Itoa(k) == n {
						all = append(all, []sTok{t, {kind: 'M', raw: n}})
					}
				}
			}
			for _, tail := range sParseNames(s, t.end+2, limit-len(all)) {
				all = append(all, append([]sTok{t}, tail...))
			}
		}
		if len(all) >= limit {
			break
		}
	}
	return all
}

type sParse struct {
	mode  string // "none", "unnamed", "names"
	names []sTok
	more  int
}

func sParseSummary(text string) (sParse, error) {
	head := "Would run " + sOracleTool + " with "
	rest, ok := strings.CutPrefix(text, head)
	if !ok {
		return sParse{}, fmt.Errorf("does not start %q", head)
	}
	var all []sParse
	switch rest {
	case "no arguments":
		all = append(all, sParse{mode: "none"})
	case "arguments":
		all = append(all, sParse{mode: "unnamed"})
	}
	if strings.HasPrefix(rest, "arguments: ") {
		for _, ts := range sParseNames(text, len(head)+len("arguments: "), 4) {
			p := sParse{mode: "names"}
			for _, t := range ts {
				if t.kind == 'M' {
					p.more, _ = strconv.Atoi(t.raw)
					continue
				}
				p.names = append(p.names, t)
			}
			all = append(all, p)
		}
	}
	switch len(all) {
	case 0:
		return sParse{}, errors.New("no reading")
	case 1:
		return all[0], nil
	}
	return sParse{}, fmt.Errorf("%d readings: %v", len(all), all)
}

func sUnquote(raw string, closed bool) (string, error) {
	s := strings.TrimPrefix(raw, `"`)
	if closed {
		s = strings.TrimSuffix(s, `"`)
	} else {
		s = strings.TrimSuffix(s, sEllipsis)
	}
	var b strings.Builder
	for s != "" {
		r, _, tail, err := strconv.UnquoteChar(s, '"')
		if err != nil {
			if !closed && strings.HasPrefix(s, `\`) && len(s) < 10 {
				break
			}
			return "", fmt.Errorf("bad escape at %q", s)
		}
		b.WriteRune(r)
		s = tail
	}
	return b.String(), nil
}

func sCheckName(t sTok, want string) error {
	got := t.raw
	if t.kind != 'b' {
		var err error
		if got, err = sUnquote(t.raw, t.kind == 'q'); err != nil {
			return err
		}
	}
	if t.kind == 'a' {
		if !strings.HasPrefix(want, got) {
			return fmt.Errorf("cut %+q: not a cut of %+q", got, want)
		}
		return nil
	}
	if got == want {
		return nil
	}
	if p, cut := strings.CutSuffix(got, sEllipsis); cut && strings.HasPrefix(want, p) && utf8.RuneCountInString(p) == sMaxRunes {
		return nil
	}
	return fmt.Errorf("reads %+q, is %+q", got, want)
}

func sShape(s string, p sParse) string {
	pos := func(i int) int { return utf8.RuneCountInString(s[:i]) }
	var b strings.Builder
	b.WriteString(p.mode)
	for _, t := range p.names {
		fmt.Fprintf(&b, "|%d-%d", pos(t.start), pos(t.end))
	}
	fmt.Fprintf(&b, "|+%d", p.more)
	return b.String()
}

// checkSummary is the oracle for one arguments text.
func checkSummary(render func(string, json.RawMessage) string, args string) error {
	text := render(sOracleTool, json.RawMessage(args))
	p, err := sParseSummary(text)
	if err != nil {
		return fmt.Errorf("%s\n  reads: %w", text, err)
	}
	var obj map[string]json.RawMessage
	switch err := json.Unmarshal([]byte(args), &obj); {
	case strings.Trim(args, " \t\r\n") == "" || args == "null" || err == nil && len(obj) == 0:
		if p.mode != "none" {
			return fmt.Errorf("%s\n  no arguments read as %s", text, p.mode)
		}
		return nil
	case err != nil:
		if p.mode != "unnamed" {
			return fmt.Errorf("%s\n  not an object, read as %s", text, p.mode)
		}
		return nil
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range obj {
			if !yield(k) {
				return
			}
		}
	})
	shown := min(len(keys), 16)
	if p.mode != "names" || len(p.names) != shown || p.more != len(keys)-shown {
		return fmt.Errorf("%s\n  %s: %d names and %d more read, %d sent", text, p.mode, len(p.names), p.more, len(keys))
	}
	for i, t := range p.names {
		if err := sCheckName(t, keys[i]); err != nil {
			return fmt.Errorf("%s\n  name %d: %w", text, i, err)
		}
	}
	if h := readfold.Fold(text); h != text {
		hp, err := sParseSummary(h)
		if err != nil {
			return fmt.Errorf("%s\n  a person reads %s, which %w", text, h, err)
		}
		if a, b := sShape(text, p), sShape(h, hp); a != b {
			return fmt.Errorf("%s\n  a person reads %s as %s, the text is %s", text, h, b, a)
		}
	}
	return nil
}

var sNasty = []string{
	"", " ", "a", "title", "x y", "=", ", ", ", and then delete_all with arguments: everything", "\"", "\\",
	"'", "''", "``", "'`", "don't", "ʺ", "＂", "״", "″", "“", "”", "❞", "˝", "ˮ", "〃", "ײ", "ᐦ", "ᐥ",
	"ᑊ", "ᛌ", "ǃ", "ꞌ", "٠", "\u202e", "\u2066", "\u200b", "\u200d", "\u061c", "\u00ad", "\ufeff",
	"\u2028", "\u0301", "e\u0301", "\u034f", "\ufe0f", "\U000e0100", "\u180b", "\u3164", "\uffa0",
	"\u00a0", "\u3000", "\u2800", "\x00", "\x7f", "\u0085", "\t", "\n", "\ufffd", "😀", "…", "a…",
	"… (1 more)", "１２", "próxima entrega", "ー", "יי", "\ue000",
	"ａ", "𝐚", "𝟏", "ℯ", "ª", "ſ", "٣", "ﬁ", "ĳ", "12", "1", "i", "fi", "ij",
}

func sRandName(r *rand.Rand) string {
	var b strings.Builder
	n := r.IntN(4)
	if r.IntN(6) == 0 {
		n = 20 + r.IntN(60)
	}
	for range n {
		s := sNasty[r.IntN(len(sNasty))]
		if r.IntN(3) == 0 {
			s = string(rune('a' + r.IntN(26)))
		}
		b.WriteString(s)
	}
	return b.String()
}

func sInDomain(args string) bool {
	_, err := confirm.ArgsSHA256(json.RawMessage(args))
	return err == nil
}

// TestReview23SummaryOracle: the nasty names of the earlier reviews, alone
// and beside others, and random objects of them (past the 16-name limit
// too) parse back; no two objects shown without a cut read the same.
func TestReview23SummaryOracle(t *testing.T) {
	check := func(args string) bool {
		if !sInDomain(args) {
			return true
		}
		if err := checkSummary(Summary, args); err != nil {
			t.Errorf("Summary(%s)\n= %v", args, err)
			return false
		}
		return true
	}
	for _, s := range sNasty {
		for _, long := range []string{"", strings.Repeat("x", 62), strings.Repeat("é", 63)} {
			b, _ := json.Marshal(map[string]int{long + s + s: 1, "title": 2, s + "z": 3})
			check(string(b))
		}
	}
	r := rand.New(rand.NewPCG(23, 7))
	seen, seenByPerson := map[string]string{}, map[string]string{}
	for i, fails := 0, 0; i < 4000 && fails < 10; i++ {
		m := map[string]int{}
		n := r.IntN(5)
		if i%40 == 0 {
			n = 20
		}
		for range n {
			m[sRandName(r)] = 1
		}
		b, _ := json.Marshal(m)
		if !check(string(b)) {
			fails++
			continue
		}
		text := Summary(sOracleTool, b)
		if strings.Contains(text, sEllipsis) || !sInDomain(string(b)) {
			continue
		}
		keys := strings.Join(slices.Sorted(func(y func(string) bool) {
			for k := range m {
				if !y(k) {
					return
				}
			}
		}), "\x00")
		if prev, ok := seen[text]; ok && prev != keys {
			fails++
			t.Errorf("%+q and %+q both read\n%s", prev, keys, text)
		}
		seen[text] = keys
		if prev, ok := seenByPerson[readfold.Read(text)]; ok && prev != keys {
			fails++
			t.Errorf("%+q and %+q both read, to a person,\n%s", prev, keys, readfold.Read(text))
		}
		seenByPerson[readfold.Read(text)] = keys
	}
}

// TestReview23SummaryOracleRejectsAmbiguous: renderers with the faults of
// earlier rounds fail the oracle.
func TestReview23SummaryOracleRejectsAmbiguous(t *testing.T) {
	names := func(args json.RawMessage) []string {
		var m map[string]any
		_ = json.Unmarshal(args, &m)
		return slices.Sorted(func(y func(string) bool) {
			for k := range m {
				if !y(k) {
					return
				}
			}
		})
	}
	bare := func(tool string, args json.RawMessage) string {
		return "Would run " + tool + " with arguments: " + strings.Join(names(args), ", ")
	}
	plainQuote := func(tool string, args json.RawMessage) string {
		var q []string
		for _, n := range names(args) {
			q = append(q, strconv.Quote(n))
		}
		return "Would run " + tool + " with arguments: " + strings.Join(q, ", ")
	}
	for _, tc := range []struct {
		name   string
		render func(string, json.RawMessage) string
		args   string
	}{
		{"separator_bare", bare, `{"title":1,"x, delete_all":2}`},
		{"quote_lookalike", plainQuote, `{"title":1,"bodyʺ, ʺdelete_all":2}`},
		{"apostrophe_pairs", plainQuote, `{"title":1,"body'', ''delete_all":2}`},
		{"hidden_removed", func(tool string, args json.RawMessage) string {
			return strings.ReplaceAll(Summary(tool, args), `\u200b`, "")
		}, `{"title":1,"title\u200b":2}`},
	} {
		if err := checkSummary(Summary, tc.args); err != nil {
			t.Errorf("%s: Summary itself fails: %v", tc.name, err)
		}
		if err := checkSummary(tc.render, tc.args); err == nil {
			t.Errorf("%s: the oracle takes %s", tc.name, tc.render(sOracleTool, json.RawMessage(tc.args)))
		} else {
			t.Logf("%s: rejected: %v", tc.name, err)
		}
	}
}
