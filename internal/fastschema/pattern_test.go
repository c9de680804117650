package fastschema

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// patternCases are the patterns the matcher is checked with; fast says
// whether the automaton must take it (true) or regexp (false).
var patternCases = []struct {
	name, pattern string
	fast          bool
}{
	{"cust_id", `^CUST-[A-Z0-9]{5}$`, true},
	{"slug", `^[a-z][a-z0-9_-]{2,31}$`, true},
	{"year_month", `^\d{4}-\d{2}$`, true},
	{"order", `^ORD-[0-9]+$`, true},
	{"empty", ``, true},
	{"caret", `^`, true},
	{"dollar", `$`, true},
	{"caret_dollar", `^$`, true},
	{"unanchored", `a`, true},
	{"anchored_start", `^a`, true},
	{"anchored_end", `a$`, true},
	{"anchored_both", `^a$`, true},
	{"text_anchors", `\Aab\z`, true},
	{"repeat_zero", `a{0}`, true},
	{"repeat_zero_anchored", `^a{0}$`, true},
	{"repeat_zero_one", `^a{0,1}b$`, true},
	{"repeat_at_least", `^a{3,}$`, true},
	{"repeat_at_least_unanchored", `ba{3,}c`, true},
	{"repeat_range", `a{2,4}`, true},
	{"repeat_range_anchored", `^a{2,4}$`, true},
	{"repeat_exact_one", `^x{1}y{1,1}$`, true},
	{"star", `^ab*c$`, true},
	{"star_only", `^a*$`, true},
	{"plus", `a+b`, true},
	{"quest", `^colou?r$`, true},
	{"lazy", `^x*?y+?z??$`, true},
	{"ungreedy_flag", `(?U)^a+b*$`, true},
	{"nested_captures", `((a)(b(c)))`, true},
	{"capture_anchors", `^(a(b))c$`, true},
	{"capture_begin", `(^a)b`, true},
	{"capture_end", `a(b$)`, true},
	{"empty_capture", `a()b`, true},
	{"named_capture", `^(?P<id>[0-9]+)$`, true},
	{"fold_plain", `(?i)^ord-\d+$`, true},
	{"fold_mixed", `^A(?i:b)C$`, true},
	{"class_k", `^[Kk]+$`, true},
	{"class_s", `^[Ss]$`, true},
	{"digit", `\d`, true},
	{"word", `^\w+$`, true},
	{"space", `^\s*x\s*$`, true},
	{"factored_alternation", `^(ab|ac)$`, true},
	{"unfactored_alternation", `^ab|^ac`, false},
	{"alternation_as_class", `^(a|b)$`, true},
	{"ascii_range", `^[\x00-\x7f]+$`, true},
	{"negated_non_ascii", `^[^\x80-\x{10FFFF}]$`, true},
	{"nul", `\x00`, true},
	{"newline_literal", `^a\nb$`, true},
	{"escaped_dot", `^a\.b$`, true},
	{"posix_class", `^[[:alpha:]]+$`, true},
	{"max_positions", `^a{63}$`, true},
	{"max_positions_optional", `a{0,63}`, true},
	{"max_positions_mixed", `^a{62}b*$`, true},
	{"digit_then_star_end", `[0-9]*$`, true},

	{"too_many_positions", `^a{64}$`, false},
	{"too_many_loop", `^a{63}b+$`, false},
	{"negated_class", `[^a]`, false},
	{"negated_digit", `^\D$`, false},
	{"dot", `^.$`, false},
	{"dot_all", `(?s)^.$`, false},
	{"alternation", `^(a|bc)$`, false},
	{"word_boundary", `\ba`, false},
	{"not_word_boundary", `\Ba`, false},
	{"multiline", `(?m)^a$`, false},
	{"begin_in_middle", `a^b`, false},
	{"end_in_middle", `a$b`, false},
	{"end_first", `$a`, false},
	{"double_caret", `^^a`, false},
	{"unicode_class", `^\pL$`, false},
	{"non_ascii_literal", `^é$`, false},
	{"fold_k", `(?i)^k$`, false},
	{"fold_s", `(?i)s`, false},
	{"fold_word_with_k", `(?i)^ok$`, false},
	{"fold_class", `(?i)^[a-z]+$`, false},
	{"fold_non_ascii", `(?i)é`, false},
	{"repeat_group", `^(ab)+$`, false},
	{"repeat_noncapture", `^(?:ab){2}$`, false},
	{"repeat_empty", `^()*a$`, false},
}

// patternInputs are tried against every pattern.
var patternInputs = []string{
	"", "a", "b", "ab", "abc", "aab", "ba", "bac", "baaac", "baaaac", "aaaa", "aaaaa",
	"xy", "xxyyz", "y", "colour", "color", "colouur",
	"CUST-00001", "CUST-0000", "CUST-000011", "xCUST-00001", "CUST-00001\n", "cust-00001", "CUST-0000é",
	"ab_c-9", "a1", "Zab", "ord-12", "ORD-", "ORD-123", "oRd-9", "ORD-12\n",
	"2024-01", "2024-1", "２024-01", "1", "x",
	"k", "K", "kk", "\u212a", "k\u212a", "ok", "o\u212a", "s", "S", "\u017f", "s\u017f", "é", "É",
	"abC", "aBC", "AbC",
	"\n", "a\n", "\na", "a\nb", "a.b", "axb", " x ", "\tx\n",
	"\x00", "\x7f", "\x80", "\xff", "a\xffb", "\xffa", "a\xff", "\xe2\x82", "\xe2\x82a", "\xc3", "\xc3\xa9a",
	"\xed\xa0\x80", "\xf4\x90\x80\x80", "\xef\xbf\xbd",
	strings.Repeat("a", 62), strings.Repeat("a", 63), strings.Repeat("a", 64),
	strings.Repeat("a", 62) + "b", strings.Repeat("a", 62) + "bbb", strings.Repeat("a", 63) + "b",
}

func TestMatcherAgreesWithRegexp(t *testing.T) {
	for _, tc := range patternCases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := compileMatcher(tc.pattern)
			if err != nil {
				t.Fatalf("compileMatcher(%q): %v", tc.pattern, err)
			}
			if got := m.re == nil; got != tc.fast {
				t.Fatalf("compileMatcher(%q) uses the automaton: %v, want %v", tc.pattern, got, tc.fast)
			}
			re := regexp.MustCompile(tc.pattern)
			for _, in := range patternInputs {
				want := re.Match([]byte(in))
				if got := m.match([]byte(in)); got != want {
					t.Errorf("match(%q, %q) = %v, regexp says %v", tc.pattern, in, got, want)
				}
			}
		})
	}
}

// TestMatcherVerdicts pins a few verdicts, so that a bug shared by the
// automaton and the comparison would still show.
func TestMatcherVerdicts(t *testing.T) {
	tests := []struct {
		pattern, in string
		want        bool
	}{
		{`^CUST-[A-Z0-9]{5}$`, "CUST-00001", true},
		{`^CUST-[A-Z0-9]{5}$`, "CUST-00001\n", false},
		{`^CUST-[A-Z0-9]{5}$`, "CUST-0000\u212a", false},
		{`CUST`, "a CUST b", true},
		{`^a{3,}$`, "aa", false},
		{`^a{3,}$`, "aaaaaaa", true},
		{`^a{0}$`, "", true},
		{`^a{0}$`, "a", false},
		{`^[Kk]$`, "\u212a", false},
		{`(?i)^k$`, "\u212a", true},
		{`(?i)^s$`, "\u017f", true},
		{`(?i)^ab$`, "aB", true},
		{`^\w$`, "\xff", false},
		{`^[\x00-\x7f]$`, "\xff", false},
		{`^[\x00-\x7f]$`, "\x7f", true},
	}
	for _, tc := range tests {
		m, err := compileMatcher(tc.pattern)
		if err != nil {
			t.Fatalf("compileMatcher(%q): %v", tc.pattern, err)
		}
		if got := m.match([]byte(tc.in)); got != tc.want {
			t.Errorf("match(%q, %q) = %v, want %v", tc.pattern, tc.in, got, tc.want)
		}
	}
}

func TestCompileMatcherRefusesWhatRegexpRefuses(t *testing.T) {
	for _, p := range []string{`(?<x`, `a**`, `[z-a]`, `a{1001}`, `\8`, `(?i`} {
		_, err := compileMatcher(p)
		_, want := regexp.Compile(p)
		if (err == nil) != (want == nil) {
			t.Errorf("compileMatcher(%q) error %v, regexp.Compile error %v", p, err, want)
		}
	}
}

// TestMatcherRandom compares the automaton with regexp on patterns drawn
// from the supported subset (and a little beyond it) and on inputs over a
// small alphabet that includes case variants, non-ASCII and invalid UTF-8.
func TestMatcherRandom(t *testing.T) {
	atoms := []string{`a`, `b`, `k`, `s`, `-`, `[ab]`, `[a-c]`, `\d`, `\w`, `[Kk]`, `[^a]`, `.`, `\n`, `(a)`, `(?i:a)`, `(?i:k)`, `(?:a|b)`}
	quants := []string{``, ``, ``, `*`, `+`, `?`, `{0}`, `{2}`, `{0,1}`, `{1,3}`, `{2,}`, `*?`, `+?`}
	alphabet := []string{"a", "b", "c", "A", "k", "K", "\u212a", "s", "\u017f", "-", "1", "_", "\n", "é", "\xff", "\xe2"}
	rng := rand.New(rand.NewPCG(1, 2))
	fast := 0
	const patterns = 3000
	for range patterns {
		var sb strings.Builder
		if rng.IntN(2) == 0 {
			sb.WriteString(`^`)
		}
		for range 1 + rng.IntN(5) {
			sb.WriteString(atoms[rng.IntN(len(atoms))])
			sb.WriteString(quants[rng.IntN(len(quants))])
		}
		if rng.IntN(2) == 0 {
			sb.WriteString(`$`)
		}
		p := sb.String()
		g, ok := compileGlushkov(p)
		if !ok {
			continue
		}
		fast++
		re := regexp.MustCompile(p)
		for range 40 {
			var in strings.Builder
			for range rng.IntN(9) {
				in.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			b := []byte(in.String())
			if got, want := g.match(b), re.Match(b); got != want {
				t.Fatalf("match(%q, %q) = %v, regexp says %v", p, b, got, want)
			}
		}
	}
	if fast < patterns/4 {
		t.Errorf("only %d of %d random patterns took the automaton", fast, patterns)
	}
}

func TestMatcherDoesNotAllocate(t *testing.T) {
	m, err := compileMatcher(`^CUST-[A-Z0-9]{5}$`)
	if err != nil || m.re != nil {
		t.Fatalf("compileMatcher: %v, regexp fallback %v", err, m.re != nil)
	}
	b := []byte("CUST-00001")
	if n := testing.AllocsPerRun(200, func() { m.match(b) }); n != 0 {
		t.Errorf("match allocates %v times", n)
	}
}

// FuzzPatternMatch checks that whenever the automaton takes a pattern, its
// verdict on any input equals regexp's.
func FuzzPatternMatch(f *testing.F) {
	for i, tc := range patternCases {
		f.Add(tc.pattern, []byte(patternInputs[i%len(patternInputs)]))
		f.Add(tc.pattern, []byte("CUST-00001"))
	}
	f.Fuzz(func(t *testing.T, pattern string, input []byte) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		g, ok := compileGlushkov(pattern)
		if !ok {
			return
		}
		if got, want := g.match(input), re.Match(input); got != want {
			t.Fatalf("match(%q, %q) = %v, regexp says %v", pattern, input, got, want)
		}
	})
}

func BenchmarkPattern(b *testing.B) {
	const pattern = `^CUST-[A-Z0-9]{5}$`
	in := []byte("CUST-00001")
	b.Run("regexp", func(b *testing.B) {
		re := regexp.MustCompile(pattern)
		b.ReportAllocs()
		for b.Loop() {
			if !re.Match(in) {
				b.Fatal("no match")
			}
		}
	})
	b.Run("matcher", func(b *testing.B) {
		m, err := compileMatcher(pattern)
		if err != nil || m.re != nil {
			b.Fatalf("compileMatcher: %v, regexp fallback %v", err, m.re != nil)
		}
		b.ReportAllocs()
		for b.Loop() {
			if !m.match(in) {
				b.Fatal("no match")
			}
		}
	})
}
