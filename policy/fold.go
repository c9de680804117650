package policy

import "github.com/mcpguard/mcpguard/internal/namekey"

// Names are matched by the rules under case folding as well as exactly
// (see [Policy.Resolve]): the MCP specification has tool names compared
// case-sensitively, but a downstream server that lower-cases, upper-cases
// or case-folds the names it is called with (a gateway cannot know) would
// otherwise run a protected tool under a spelling no rule names.
//
// Two names match when their keys (appendKey, internal/namekey's) are equal. The key is wide
// on purpose: it equates every spelling some lenient matcher equates (Go's
// strings.ToLower and ToUpper, Python's lower, upper and casefold,
// JavaScript's toLowerCase and toUpperCase, NFKC case folding's dropping
// of default-ignorable characters), and a name the key matches to a rule
// only ever gets more demanded of it, never less (see Policy.Resolve).

// keyBufSize is the size of the stack buffer a name's key is made in: a
// key is cut once it is longer than every key of the policy's names
// ([Policy].maxKey), so no key of a policy whose names' keys are under
// keyBufSize-8 bytes needs the heap.
const keyBufSize = namekey.BufSize

// appendKey appends to dst the key of s under which the rules match it
// (see namekey.Append), cut once more than limit bytes were appended.
func appendKey(dst []byte, s string, limit int) []byte { return namekey.Append(dst, s, limit) }

// NameKey returns the key under which the rules match the tool name name:
// two names with the same key are one tool to a [Policy] (see
// [Policy.Resolve]), and to a limiter.Limit for one tool, and may be one
// tool to a downstream server that is lenient with the case of names. A
// gateway that keeps a state per tool keeps it per key, so that no other
// spelling of a name escapes it.
func NameKey(name string) string { return namekey.Of(name) }

// keyOf returns the key of a name given in the configuration.
func keyOf(s string) string { return namekey.Of(s) }

// ignorable reports a default-ignorable character (see namekey.Ignorable).
func ignorable(r rune) bool { return namekey.Ignorable(r) }
