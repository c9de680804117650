package confirm

import (
	"encoding/json"
	"html"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// Many MCP hosts render an elicitation's message as Markdown (CommonMark,
// mostly with GitHub's extensions), which allows raw HTML. Describe's text
// is a single line that opens with "Run ", so no block construct (HTML
// block, heading, list, link reference definition, ...) can start in it:
// what an argument can do is inline. md65iVisible below renders a line as
// a CommonMark inline parser would, reduced to the text a person sees:
//
//   - a backslash before ASCII punctuation is that character (\" shows ");
//   - an entity or numeric character reference is the character (&quot;
//     shows ", &#x202e; a bidirectional override, &#10; a line feed);
//   - a code span shows its content without the backticks;
//   - an autolink <scheme:...> shows without its angle brackets;
//   - raw HTML shows nothing: a comment <!-- ... --> (and what it holds), a
//     processing instruction, a declaration, CDATA, a tag; the content of an
//     element a browser does not show (hidden, display:none, <details>
//     outside its <summary>, <template>, <script>, <style>) shows nothing
//     either; <br> is a line break;
//   - an inline link or image [text](dest) shows text (an image nothing);
//   - emphasis (* and _, by the flanking rules) and GFM strikethrough (~)
//     lose their delimiters.
//
// The rendering is simplified (no rule of 3, no nesting of links), which is
// enough for the lines below: each attack works in any CommonMark renderer.

var (
	md65iAutolink = regexp.MustCompile(`^<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\x00-\x20]*>|^<[A-Za-z0-9.!#$%&'*+/=?^_{|}~-]+@[A-Za-z0-9.-]+>`)
	md65iComment  = regexp.MustCompile(`^(?s:<!-->|<!--->|<!--.*?-->)`)
	md65iPI       = regexp.MustCompile(`^(?s:<\?.*?\?>)`)
	md65iCDATA    = regexp.MustCompile(`^(?s:<!\[CDATA\[.*?\]\]>)`)
	md65iDecl     = regexp.MustCompile(`^(?s:<![A-Za-z][^>]*>)`)
	md65iOpenTag  = regexp.MustCompile(`^<([A-Za-z][A-Za-z0-9-]*)((?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^\s"'=<>` + "`" + `]+|'[^']*'|"[^"]*"))?)*)\s*/?>`)
	md65iCloseTag = regexp.MustCompile(`^</([A-Za-z][A-Za-z0-9-]*)\s*>`)
	md65iEntity   = regexp.MustCompile(`^&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});`)
	md65iLink     = regexp.MustCompile(`^!?\[([^\[\]]*)\]\(\s*(?:<[^<>\n]*>|[^\s()]*)(?:\s+(?:"[^"]*"|'[^']*'|\([^()]*\)))?\s*\)`)
)

func md65iPunct(c byte) bool {
	return c < utf8.RuneSelf && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}

// md65iClass is the class of the character before or after a delimiter
// run, for the flanking rules: ' ' white space (or the line's edge), 'p'
// punctuation (Unicode P or S), 'a' anything else.
func md65iClass(r rune, ok bool) byte {
	switch {
	case !ok || unicode.IsSpace(r):
		return ' '
	case unicode.In(r, unicode.P, unicode.S):
		return 'p'
	}
	return 'a'
}

type md65iTok struct {
	text            string
	delim           byte // '*', '_', '~' for a delimiter run
	n               int
	open, close     bool
	hiddenFromHuman bool
}

// md65iVisible returns the text a person sees when line is rendered as
// CommonMark (with GFM strikethrough).
func md65iVisible(line string) string {
	var toks []md65iTok
	hidden := 0
	add := func(s string) { toks = append(toks, md65iTok{text: s, hiddenFromHuman: hidden > 0}) }
	for i := 0; i < len(line); {
		c := line[i]
		rest := line[i:]
		switch {
		case c == '\\' && i+1 < len(line) && md65iPunct(line[i+1]):
			add(line[i+1 : i+2])
			i += 2
		case c == '`':
			n := len(rest) - len(strings.TrimLeft(rest, "`"))
			run := rest[:n]
			j, found := i+n, false
			for j < len(line) {
				k := strings.Index(line[j:], run)
				if k < 0 {
					break
				}
				k += j
				m := len(line[k:]) - len(strings.TrimLeft(line[k:], "`"))
				if m == n {
					content := line[i+n : k]
					if len(content) > 1 && content[0] == ' ' && content[len(content)-1] == ' ' && strings.Trim(content, " ") != "" {
						content = content[1 : len(content)-1]
					}
					add(content)
					i, found = k+n, true
					break
				}
				j = k + m
			}
			if !found {
				add(run)
				i += n
			}
		case c == '<':
			if m := md65iAutolink.FindString(rest); m != "" {
				add(m[1 : len(m)-1])
				i += len(m)
				continue
			}
			var m string
			for _, re := range []*regexp.Regexp{md65iComment, md65iPI, md65iCDATA, md65iDecl} {
				if m = re.FindString(rest); m != "" {
					break
				}
			}
			if m != "" {
				i += len(m) // shows nothing
				continue
			}
			if sm := md65iOpenTag.FindStringSubmatch(rest); sm != nil {
				name, attrs := strings.ToLower(sm[1]), strings.ToLower(sm[2])
				switch {
				case name == "br":
					add("\n")
				case name == "details" || name == "template" || name == "script" || name == "style" ||
					strings.Contains(attrs, "hidden") || strings.Contains(attrs, "display:none") ||
					strings.Contains(attrs, "display: none"):
					if !strings.HasSuffix(sm[0], "/>") {
						hidden++
					}
				}
				i += len(sm[0])
				continue
			}
			if sm := md65iCloseTag.FindStringSubmatch(rest); sm != nil {
				if hidden > 0 {
					hidden--
				}
				i += len(sm[0])
				continue
			}
			add("<")
			i++
		case c == '&':
			if m := md65iEntity.FindString(rest); m != "" && html.UnescapeString(m) != m {
				add(html.UnescapeString(m))
				i += len(m)
				continue
			}
			add("&")
			i++
		case c == '[' || c == '!' && strings.HasPrefix(rest, "!["):
			if sm := md65iLink.FindStringSubmatch(rest); sm != nil {
				if c == '[' {
					add(md65iVisible(sm[1]))
				}
				i += len(sm[0])
				continue
			}
			add(line[i : i+1])
			i++
		case c == '*' || c == '_' || c == '~':
			n := len(rest) - len(strings.TrimLeft(rest, string(c)))
			before, _ := utf8.DecodeLastRuneInString(line[:i])
			after, _ := utf8.DecodeRuneInString(line[i+n:])
			b, a := md65iClass(before, i > 0), md65iClass(after, i+n < len(line))
			left := a != ' ' && (a != 'p' || b != 'a')
			right := b != ' ' && (b != 'p' || a != 'a')
			open, closing := left, right
			if c == '_' {
				open = left && (!right || b == 'p')
				closing = right && (!left || a == 'p')
			}
			toks = append(toks, md65iTok{text: rest[:n], delim: c, n: n, open: open, close: closing, hiddenFromHuman: hidden > 0})
			i += n
		default:
			_, size := utf8.DecodeRuneInString(rest)
			add(rest[:size])
			i += size
		}
	}
	// Emphasis and strikethrough: match each closer with the nearest
	// opener of its character before it; matched delimiters show nothing.
	for k := range toks {
		if toks[k].delim == 0 || !toks[k].close {
			continue
		}
		for j := k - 1; j >= 0 && toks[k].n > 0; j-- {
			o := &toks[j]
			if o.delim != toks[k].delim || !o.open || o.n == 0 {
				continue
			}
			use := min(o.n, toks[k].n, 2)
			if o.delim == '~' {
				if o.n != toks[k].n {
					continue
				}
				use = o.n
			}
			o.n -= use
			toks[k].n -= use
		}
	}
	var out strings.Builder
	for _, t := range toks {
		if t.hiddenFromHuman {
			continue
		}
		if t.delim != 0 {
			out.WriteString(strings.Repeat(string(t.delim), t.n))
			continue
		}
		out.WriteString(t.text)
	}
	return out.String()
}

// TestReview65iRendererSelfCheck: the renderer does what CommonMark does
// on the constructs the attacks below use.
func TestReview65iRendererSelfCheck(t *testing.T) {
	for in, want := range map[string]string{
		`a<!-- b -->c`:                `ac`,
		`a\"b\\c\n`:                   `a"b\c\n`,
		`x &quot;y&quot; &amp; &foo;`: `x "y" & &foo;`,
		"a `b` c":                     "a b c",
		`<https://e.example/x> y`:     `https://e.example/x y`,
		`a<span hidden>b</span>c`:     `ac`,
		`a<br>b`:                      "a\nb",
		`[GOOD](https://evil) x`:      `GOOD x`,
		`a*b*c _d_ e_f_g ~~h~~`:       `abc d e_f_g h`,
		`customer_id=1, x=2`:          `customer_id=1, x=2`,
		`p ![i](http://e/x.png) q`:    `p  q`,
		`a<details>b</details>c`:      `ac`,
	} {
		if got := md65iVisible(in); got != want {
			t.Errorf("md65iVisible(%q) = %q, want %q", in, got, want)
		}
	}
}

// review65iAttacks are arguments, names and values a prompt-injected model
// can choose, that hide, fake or reorder text of the question once it is
// rendered as Markdown. The comment says what the rendered line would read.
var review65iAttacks = []string{
	// An HTML comment hides the argument "to": Run t with a="".
	`{"a":"<!--","to":"EVIL","u":"-->"}`,
	`{"b":"<!--","to":"EVIL","d":"-->"}`,
	// Names: the same with keys.
	`{"<!--":1,"to":"EVIL","z-->":2}`,
	// Nested values.
	`{"a":{"x":"<!--"},"to":"EVIL","z":["-->"]}`,
	// A processing instruction, a declaration, CDATA.
	`{"a":"<?","to":"EVIL","z":"?>"}`,
	`{"a":"<!X","to":"EVIL","z":">"}`,
	`{"a":"<![CDATA[","to":"EVIL","z":"]]>"}`,
	// Elements a browser does not show.
	`{"a":"<span hidden>","to":"EVIL","z":"</span>"}`,
	`{"a":"<details>","to":"EVIL","z":"</details>"}`,
	`{"a":"<b style=display:none>","to":"EVIL","z":"</b>"}`,
	// A line break: a line of its own that reads as the server's words.
	`{"amount":5000,"note":"x<br>Run refund with amount=5"}`,
	// Backslash escapes: strconv.Quote's \" renders as ", so that the
	// quoted value ends early and the rest reads as arguments:
	// note="x", to=GOOD, y="" for one argument note.
	`{"note":"x\", to=GOOD, y=\""}`,
	`{"v":{"note":"x\", to=GOOD, y=\""}}`,
	`{"note":"C:\\\\"}`,
	// Entity references: &quot; renders as ", &#x202e; as a bidirectional
	// override (Describe escapes the character itself), &#8203; as a
	// zero-width space, &#10; as a line feed, &lt;!-- as the text <!--.
	`{"note":"x&quot;, to=GOOD, y=&quot;"}`,
	`{"to":"&#x202e;LIVE&#x202c;"}`,
	`{"to":"GO&#8203;OD"}`,
	`{"to":"&lt;b&gt;"}`,
	// A code span: the backticks vanish.
	"{\"a\":\"`\",\"to\":\"EVIL\",\"z\":\"`\"}",
	// An autolink loses its brackets.
	`{"to":"<mailto:GOOD>"}`,
	// A link shows its text, not its destination; an image nothing.
	`{"to":"[GOOD](EVIL)"}`,
	`{"to":"![GOOD](http://e.example/p.png)EVIL"}`,
	`{"[GOOD](x":1}`,
	// Emphasis and strikethrough: delimiters vanish (names and values).
	`{"_to":1,"b_":2}`,
	`{"a":"*","to":"EVIL","z":"*"}`,
	`{"to":"__init__"}`,
	`{"to":"~~GOOD~~ EVIL"}`,
	`{"a":"~","to":"x","z":"~"}`,
}

// TestReview65iDescribeRendersAsWritten: a CommonMark renderer shows
// Describe's text as written, so that no argument name or value hides,
// fakes or reorders text of the question.
func TestReview65iDescribeRendersAsWritten(t *testing.T) {
	for _, args := range review65iAttacks {
		if !json.Valid([]byte(args)) {
			t.Fatalf("bad test input %s", args)
		}
		got := Describe("t", json.RawMessage(args))
		if seen := md65iVisible(got); seen != got {
			t.Errorf("arguments %s:\nDescribe: %s\nrendered: %s", args, got, seen)
		}
	}
}

// TestReview65iHTMLCommentHidesArgument is the finding as reported: the
// argument "to" does not show in the rendered question.
func TestReview65iHTMLCommentHidesArgument(t *testing.T) {
	got := Describe("send", json.RawMessage(`{"a":"<!--","to":"EVIL","u":"-->"}`))
	if seen := md65iVisible(got); !strings.Contains(seen, "EVIL") {
		t.Fatalf("the argument to=EVIL is invisible once rendered:\nDescribe: %s\nrendered: %s", got, seen)
	}
}

// TestReview65iBackslashQuoteFakesArgument: one argument, note, reads as
// three once rendered, one of them to=GOOD.
func TestReview65iBackslashQuoteFakesArgument(t *testing.T) {
	got := Describe("send", json.RawMessage(`{"note":"x\", to=GOOD, y=\"","to":"EVIL"}`))
	if seen := md65iVisible(got); strings.Contains(seen, `note="x", to=GOOD, `) {
		t.Fatalf("a note value renders as an argument to=GOOD:\nDescribe: %s\nrendered: %s", got, seen)
	}
}

// TestReview65iNoMarkupLeft checks Describe's text, over the attacks and
// every ASCII punctuation character in each place an argument can put it,
// for what CommonMark (and GFM) could read as markup: the characters
// < > & ` [ ] * ~ none at all (escaped as \u003c and the like, which a Go
// or JSON reader reads back, and a Markdown renderer shows as written), a
// backslash only before a letter (\" and \\ are written \u0022 and
// \u005c), an underscore only after a letter or digit (customer_id), and
// no line break.
func TestReview65iNoMarkupLeft(t *testing.T) {
	var inputs []string
	inputs = append(inputs, review65iAttacks...)
	for c := byte('!'); c <= '~'; c++ {
		if md65iPunct(c) {
			s, _ := json.Marshal(string(c))
			w, _ := json.Marshal("ab" + string(c) + "cd")
			e, _ := json.Marshal(string(c) + "ab" + string(c))
			inputs = append(inputs,
				`{"k":`+string(s)+`}`, `{"k":`+string(w)+`}`, `{"k":`+string(e)+`}`,
				`{`+string(s)+`:1}`, `{`+string(w)+`:1}`, `{`+string(e)+`:1}`,
				`{"k":{"x":`+string(e)+`}}`, `{"k":[`+string(e)+`,`+string(w)+`]}`,
				`{"k":"Мос`+string(c)+`ква"}`, `{"k":"\u0000`+string(c)+`"}`)
		}
	}
	for _, args := range inputs {
		got := Describe("t", json.RawMessage(args))
		if bad := review65iMarkup(got); bad != "" {
			t.Errorf("arguments %s: Describe: %s: %s", args, got, bad)
		}
	}
}

func review65iMarkup(s string) string {
	if i := strings.IndexAny(s, "<>&`*~\n\r"); i >= 0 {
		return "holds " + string(s[i])
	}
	// Brackets only as JSON's own (outside its strings), which cannot
	// make a link: no "](" and no "][" .
	if strings.Contains(s, "](") || strings.Contains(s, "][") {
		return "holds a link's brackets"
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && md65iPunct(s[i+1]) {
				return "holds a backslash escape " + s[i:i+2]
			}
		case '_':
			// One that follows a letter or digit cannot open emphasis
			// (CommonMark's flanking rules), and with no opener no
			// underscore closes one.
			b, _ := utf8.DecodeLastRuneInString(s[:i])
			if i == 0 || !review65iAlnum(b) {
				return "holds an underscore that may open emphasis"
			}
		}
	}
	return ""
}

func review65iAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// TestReview65iRandomMarkup: random keys, values and tool names made of
// Markdown's punctuation, letters, digits and a cut's length render as
// written and hold no markup.
func TestReview65iRandomMarkup(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 9))
	alphabet := []string{"<", ">", "&", "`", "[", "]", "(", ")", "*", "_", "~", "\\", "\"", "!",
		"#", ";", ":", "a", "b", "1", "ж", "А", " ", "\n", "\u202e", "-", "--", "<!--", "-->", "&quot;", "…"}
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 3000 {
		obj := map[string]any{}
		for range 1 + rng.IntN(3) {
			n := 1 + rng.IntN(6)
			if rng.IntN(8) == 0 {
				n = 40 + rng.IntN(40) // cut at 80 characters
			}
			switch rng.IntN(3) {
			case 0:
				obj[word(n)] = word(n)
			case 1:
				obj[word(2)] = map[string]any{word(n): []any{word(n), 1}}
			default:
				obj["k"+word(1)] = word(n)
			}
		}
		args, _ := json.Marshal(obj)
		tool := "t" + word(3)
		got := Describe(tool, args)
		if seen := md65iVisible(got); seen != got {
			t.Fatalf("Describe(%q, %s):\n%s\nrenders as\n%s", tool, args, got, seen)
		}
		if bad := review65iMarkup(got); bad != "" {
			t.Fatalf("Describe(%q, %s): %s: %s", tool, args, got, bad)
		}
	}
}
