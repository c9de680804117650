package dryrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpguard/mcpguard/internal/textsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaKey is the _meta key of a tools/call request with which a client asks
// for a preview of that one call, with the value true. Any value but the
// JSON boolean false requests a preview; see [Requested].
const MetaKey = "io.mcpguard/dryRun"

// IDPrefix starts every identifier made by [NewID].
const IDPrefix = "DRYRUN-"

type ctxKey struct{}

// NewContext returns a copy of ctx marked as dry-run. A handler called with it
// must not touch its downstream.
func NewContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, true)
}

// FromContext reports whether ctx was marked by [NewContext]. It is false for
// a context that was never marked.
func FromContext(ctx context.Context) bool {
	v, _ := ctx.Value(ctxKey{}).(bool)
	return v
}

// Requested reports whether a tools/call request's _meta asks for a preview.
// It fails closed: a key equal to [MetaKey] but for letter case counts as
// MetaKey, and any value under it other than the JSON boolean false (true,
// but also "true", 1, null, "false") asks for one, since a client that
// wrote the flag in a form the guard does not read exactly meant a preview
// more likely than a real write, and a preview only does less. It reports
// false for a nil meta, a missing key, or false under every key that
// matches. A false result never turns dry-run off; the guard ORs it with
// the server's configuration.
func Requested(meta mcp.Meta) bool {
	for k, v := range meta {
		if b, isBool := v.(bool); (!isBool || b) && strings.EqualFold(k, MetaKey) {
			return true
		}
	}
	return false
}

// NewID returns a fresh synthetic identifier: [IDPrefix] followed by 16
// lower-case hex characters from crypto/rand.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error (Go 1.24+).
	return IDPrefix + hex.EncodeToString(b[:])
}

// Result returns the simulated result of a write that did not run: a
// non-error result whose structured content is
//
//	{"dry_run":true,"id":"DRYRUN-…","summary":summary,"tool":tool}
//
// with the same JSON as its single text content. The id is fresh from
// [NewID]. The summary is shown to the model: it must contain no secrets
// ([Summary] builds one that never includes argument values).
func Result(tool, summary string) *mcp.CallToolResult {
	sc := map[string]any{
		"dry_run": true,
		"id":      NewID(),
		"tool":    tool,
		"summary": summary,
	}
	// A map of strings and a bool always marshals.
	text, _ := json.Marshal(sc)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(text)}},
		StructuredContent: sc,
	}
}

const (
	maxNameRunes = 64
	maxNames     = 16
)

// Summary describes, without any argument values, what a write would have
// done:
//
//	Would run create_ticket with arguments: body, title
//
// Argument names are the top-level keys of args, sorted, long names
// truncated; at most 16 are listed. A name that is a plain word (letters,
// digits and -_.:/@+#) is shown as it is; any other is quoted, so that a
// name a model chose (where the tool's schema admits names it does not
// declare) cannot read as more names or more of the sentence:
//
//	Would run create_ticket with arguments: "and then delete_all", title
//
// Inside the quotes, characters outside ASCII that are not letters or
// digits (the quotes, primes and commas of other scripts, and letters
// shaped like them, which would read as the end of the quotes) are
// escaped: "body\u02ba, \u02batitle".
//
// A name holding control or formatting characters (bidi overrides,
// zero-width characters) is quoted with every character outside printable
// ASCII escaped ("title\u200b"), so that it is seen for what it is, and so
// is one holding characters that read as ASCII letters or digits where
// they stand (fullwidth, mathematical, ligatures, other scripts' digits,
// and letters of other scripts shaped like ASCII ones: Cyrillic а in
// аmount; see [textsafe.ReadsASCIIIn]), so that ａｍｏｕｎｔ, proﬁle or
// аmount does not read as amount or profile:
// "\uff41\uff4d\uff4f\uff55\uff4e\uff54". A name wholly in one other
// script with a letter shaped like no ASCII one, that no other script with
// lookalikes can spell alike (адрес; not ПАР, Greek ΠΑΡ; not ё or ꚙ, shaped
// like ë and oo) is shown as it is, when that letter is in what is shown.
// Either way two or more apostrophes or backticks in a row, which read as
// a double quote, are escaped: "body\u0027\u0027, \u0027\u0027title".
// Values are never included, so secrets in arguments cannot leak into
// a dry-run result. Arguments that are empty (or JSON white space), null or
// not a JSON object are described without names.
func Summary(tool string, args json.RawMessage) string {
	var b strings.Builder
	b.WriteString("Would run ")
	b.WriteString(clean(tool))
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || len(obj) == 0 {
		if len(strings.Trim(string(args), " \t\r\n")) == 0 || (err == nil && len(obj) == 0) {
			b.WriteString(" with no arguments")
		} else {
			b.WriteString(" with arguments")
		}
		return b.String()
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	slices.Sort(names)
	b.WriteString(" with arguments: ")
	for i, n := range names {
		if i == maxNames {
			b.WriteString(", … (" + strconv.Itoa(len(names)-maxNames) + " more)")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(argName(n))
	}
	return b.String()
}

// argName is how [Summary] shows an argument name: bare when it is a plain
// word, else quoted, so that no name reads as a separator, as more names
// or as more of the sentence; one holding characters [clean] drops is
// quoted with every character outside printable ASCII escaped, so that it
// shows what it holds, and so is one holding characters that read as ASCII
// letters or digits where they stand ([textsafe.ReadsASCIIIn]:
// "\uff41mount" for ａmount, "\u0430mount" for аmount, Cyrillic а, which
// would read as amount), in the whole name or in what is shown of it (a
// word cut before its letter of its own script). Either way apostrophes
// in a row are escaped ([textsafe.QuotePairs]) and it is cut to about
// maxNameRunes runes.
func argName(s string) string {
	if !textsafe.Plain(s) || textsafe.ReadsASCIIIn(s) || textsafe.ReadsASCIIIn(clean(s)) {
		// Escaped too: ａｍｏｕｎｔ would read as amount.
		cut, _ := textsafe.CutBytes(s, 4*maxNameRunes)
		return clean(textsafe.QuotePairs(strconv.QuoteToASCII(cut)))
	}
	if textsafe.Word(s) {
		return clean(s)
	}
	return textsafe.QuoteShaped(clean(s))
}

// clean removes control and formatting characters (including bidi overrides)
// and truncates s to maxNameRunes runes.
func clean(s string) string { return textsafe.Clean(s, maxNameRunes) }
