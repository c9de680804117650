package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/jsondup"
	"github.com/mcpguard/mcpguard/policy"
)

// Pins holds the tool definitions a gateway lets its clients see: for each
// tool name, the SHA-256 of the definition an operator (or the first
// listing) approved. It guards against a downstream that changes a tool
// after it was approved, the "rug pull": a description that now carries
// instructions to the model, a schema that now asks for a secret, a tool
// that was read-only and now says it is not. The model reads those in the
// tools/list answer, and that is where the gateway checks them.
//
// With [Options.Pins], a tools/list answer keeps only the tools whose
// definition is the one pinned; a tool listed with another definition is
// withheld from the answer, logged and recorded (code TOOL_CHANGED), and
// its calls are refused (-32001, 403) until a listing shows the pinned
// definition again. A name one result lists twice, with the pinned
// definition and another, is withheld, and its calls refused, whichever
// comes first: a client shows either, or both. So is a name that two
// answers of one batch list so (two tools/list members, read in either
// order), or two responses of one answer (a JSON array, or events: a
// client takes the first); but an answer relayed in an event stream before
// another showed the change cannot be taken back, only the calls refused.
// With a fixed set
// ([ParsePins]) a tool the set does not name is withheld, and refused, as
// well (TOOL_NOT_PINNED). A pinned tool
// is refused under every spelling the policy takes for its name
// ([policy.NameKey]) while one of them is withheld, and, once a spelling
// not pinned itself ("REFUND" for a pinned "refund") was listed, until the
// gateway restarts: no listing of that spelling can show a pinned
// definition, and one that leaves it out does not say the downstream
// dropped it (a listing may come in pages). The gateway
// reads every tools/list answer to check it, as [Options.FilterToolsList]
// does (which also hides the tools a caller's roles do not allow), and
// every other answer too: a downstream could answer a tools/list on its
// GET stream, or in the stream of a tools/call, and a client would take
// it. At most 64 withheld tools of each kind (TOOL_CHANGED,
// TOOL_NOT_PINNED) are recorded one by one per request; one record counts
// the rest of the kind. A name that is long, or has a control or
// invisible character, is recorded in the detail, quoted, escaped and cut,
// not as the record's tool.
//
// The gateway learns that a tool changed from a listing that passes
// through it: until one does, a call of a tool the pins name is forwarded
// whatever the downstream's definition is now. A client that kept its
// listing from before a restart of the gateway would call a tool changed
// meanwhile unchecked, so list the downstream's tools through the gateway
// once before serving: [Gateway.CheckPins] does, in process (the
// examples/gateway binary calls it on a gateway of its own sharing the
// Pins).
//
// A definition is the whole tool object of the listing (name, title,
// description, schemas, annotations, icons, _meta), hashed in canonical
// JSON ([ToolDigest]): the order of its keys and its white space do not
// count, every value does. A downstream that puts changing values in a
// tool's _meta cannot have that tool pinned.
//
// The server's instructions, which the initialize answer carries and
// clients put before the model, are pinned the same way, as the tool
// named [InstructionsPin] (the [ToolDigest] of their JSON value, a
// string; of null, the SHA-256 of "null"): instructions other than the
// approved ones are dropped from the answer, logged and recorded with that
// tool name (TOOL_CHANGED, or TOOL_NOT_PINNED when a fixed set has none).
// With trust on first use, instructions a server that had none starts to
// give are approved when first seen, as a new tool is. The name approves
// no call: a tools/call of a tool so named is refused (TOOL_NOT_PINNED).
//
// A Pins is safe for concurrent use.
type Pins struct {
	mu    sync.Mutex
	fixed bool              // only the tools named: a new one is withheld
	pin   map[string]string // name -> the digest approved
	// keys maps pinKey(name) to a name pinned under it (with
	// trust on first use, the first one pinned).
	keys map[string]string
	// off maps pinKey(name) to the names listed under it whose
	// last listing had another definition than the pin, each to that
	// digest: a name is cleared by a listing of its own that matches, not
	// another spelling's. nOff counts its names.
	off  map[string]map[string]string
	nOff int
	// held holds the keys of a pin under which a name not pinned itself
	// was withheld: no listing of that name can show a pin, so the key
	// stays refused, even when off could not keep the name.
	held map[string]bool
}

// InstructionsPin is the name under which [Pins] hold the server's
// instructions: the instructions member of an initialize (or
// server/discover) result, which clients put before the model. A tool
// whose name the specification allows (letters, digits, "_", "-", ".")
// cannot have it, and a call of a tool so named is refused: its pin
// approves none.
const InstructionsPin = "#instructions"

// maxPins bounds the tools a trust-on-first-use set pins: the downstream
// names them, and a tool past the bound is withheld (TOOL_NOT_PINNED).
const maxPins = 10000

// maxPinName bounds, in bytes, the name of a tool that a trust-on-first-use
// set pins, and of one whose change [Pins] remember: the downstream
// chooses the names, as long as a listing holds (64 MiB), and 10,000 names
// of a megabyte would be kept. The specification asks for at most 128
// characters.
const maxPinName = 1024

// TrustOnFirstUse returns pins that approve the definition of each tool
// when a listing first shows it, and hold every later listing of the tool
// to that definition, for the life of the gateway (restart it to approve
// a change). A call of a tool no listing has shown yet is not refused:
// nothing is known of it to compare. At most 10,000 tools are pinned; a
// further tool is withheld, and so is a tool whose name is longer than
// 1024 bytes, or empty (a name [ParsePins] refuses): their calls are
// refused (TOOL_NOT_PINNED). A tool is known by every spelling the policy
// takes for its name ([policy.NameKey]), and by every one a client may
// read alike (a run of invalid UTF-8 or U+FFFD is one U+FFFD, and a NUL
// ends the name, as in a C string): a
// listing that shows an approved tool under another spelling ("REFUND" or
// "re\u00adfund", with a soft hyphen, once "refund" is approved) is held
// to the approved definition, and so withheld (TOOL_CHANGED, the
// definition names the tool), not approved as a new tool's; a downstream
// that lists two tools whose names differ only so gets the first one
// listed approved. As the other spelling's listing cannot show the
// approved definition, calls of the tool by any spelling are then refused
// until the gateway restarts.
func TrustOnFirstUse() *Pins {
	return &Pins{pin: map[string]string{}, keys: map[string]string{},
		off: map[string]map[string]string{}, held: map[string]bool{}}
}

// ParsePins returns the fixed set of pins in data, a JSON object from tool
// name to the lowercase hex [ToolDigest] of its approved definition, as
// [Pins.MarshalJSON] writes it (the examples/gateway binary's --print-pins
// lists a downstream's tools in that form). A tool the set does not name is
// withheld from listings and its calls are refused.
func ParsePins(data []byte) (*Pins, error) {
	if name, _, dup := jsondup.Member(data, nil); dup {
		return nil, fmt.Errorf("gateway: pins: tool %q is named twice", name)
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("gateway: pins: want a JSON object from tool name to SHA-256 hex: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("gateway: pins: want a JSON object from tool name to SHA-256 hex, got null")
	}
	for name, d := range m {
		if name == "" {
			return nil, fmt.Errorf("gateway: pins: empty tool name")
		}
		if !isDigest(d) {
			return nil, fmt.Errorf("gateway: pins: tool %q: %q is not 64 lowercase hex digits", name, d)
		}
	}
	keys := make(map[string]string, len(m))
	for name := range m {
		keys[pinKey(name)] = name
	}
	return &Pins{fixed: true, pin: m, keys: keys,
		off: map[string]map[string]string{}, held: map[string]bool{}}, nil
}

// isDigest reports whether s is 64 lowercase hex digits.
func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ToolDigest returns the lowercase hex SHA-256 of the canonical JSON of
// tool, one tool object of a tools/list result: object keys sorted, no
// insignificant white space, strings escaped as encoding/json does (but
// for an escaped lone UTF-16 surrogate, kept as its escape, and bytes of
// invalid UTF-8, written as themselves), numbers as written
// ([audit.ArgsSHA256] has the details).
func ToolDigest(tool json.RawMessage) string { return audit.ArgsSHA256(tool) }

// MarshalJSON returns the pins approved so far as a JSON object from tool
// name to digest, keys sorted: for a trust-on-first-use set, the file
// [ParsePins] reads to fix them.
func (p *Pins) MarshalJSON() ([]byte, error) {
	p.mu.Lock()
	m := maps.Clone(p.pin)
	p.mu.Unlock()
	return json.Marshal(m)
}

// A pinVerdict is what the pins say of one listed tool.
type pinVerdict uint8

const (
	pinOK        pinVerdict = iota // the pinned definition (or pinned now)
	pinChanged                     // another definition than the pin
	pinNotPinned                   // not in a fixed set, or no room left
)

// contract is the verdict's audit code.
func (v pinVerdict) contract() string {
	switch v {
	case pinChanged:
		return "TOOL_CHANGED"
	case pinNotPinned:
		return "TOOL_NOT_PINNED"
	}
	return ""
}

// listed checks one tool of a listing, named name, whose definition has
// digest d. first is true when the verdict is news: the first listing of
// a definition other than the pin since name last matched (a listing of
// it is then recorded once, not at every listing; past maxPins names
// withheld, or for a name longer than maxPinName, at every listing).
// pinned is the digest approved, "" if none.
// With trust on first use, a name not pinned itself but another spelling
// of a pinned one (pinKey) is judged against that one's pin.
func (p *Pins) listed(name, d string) (v pinVerdict, first bool, pinned string) {
	name = clientName(name)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listedLocked(name, d)
}

// listedAmong is [Pins.listed] for a tool of a listing in which mixed
// names (by clientName) the tools listed more than once with more than one
// definition. Each entry of such a name is withheld, whichever definition
// comes first: a client shows either one, or both, and the downstream
// calls its own. One with the pinned definition changes nothing (it must
// not clear the change another shows), and is not recorded; another is
// judged by listed, as changed (with trust on first use, the first listed
// of a name not pinned yet is pinned, and withheld).
func (p *Pins) listedAmong(name, d string, mixed map[string]bool) (v pinVerdict, first bool, pinned string) {
	name = clientName(name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !mixed[name] {
		return p.listedLocked(name, d)
	}
	pinned, ok := p.pin[name]
	if other, seen := p.keys[pinKey(name)]; !ok && seen && !p.fixed {
		pinned, ok = p.pin[other], true
	}
	if ok && pinned == d {
		return pinChanged, false, pinned
	}
	if v, first, pinned = p.listedLocked(name, d); v == pinOK {
		return pinChanged, false, pinned // pinned now: withheld all the same
	}
	return v, first, pinned
}

// listedLocked is [Pins.listed] for name, already clientName's, with p.mu
// held.
func (p *Pins) listedLocked(name, d string) (v pinVerdict, first bool, pinned string) {
	pinned, ok := p.pin[name]
	key := pinKey(name)
	if other, seen := p.keys[key]; !ok && seen && !p.fixed {
		pinned, ok = p.pin[other], true
	}
	switch {
	case !ok && !p.fixed && len(p.pin) < maxPins && len(name) <= maxPinName && name != "":
		p.pin[name] = d
		p.keys[key] = name
		return pinOK, false, d
	case !ok:
		v = pinNotPinned
	case pinned == d:
		if names, off := p.off[key]; off {
			if _, off := names[name]; off {
				delete(names, name)
				p.nOff--
			}
			if len(names) == 0 {
				delete(p.off, key)
			}
		}
		return pinOK, false, pinned
	default:
		v = pinChanged
	}
	_, own := p.pin[name]
	if !own && p.keys[key] != "" {
		// Another spelling of a pinned name: its listing cannot show the
		// pin, so the key is refused for good.
		p.held[key] = true
	}
	names, off := p.off[key]
	if prev, seen := names[name]; seen {
		if prev != d {
			names[name] = d
		}
		return v, prev != d, pinned
	}
	// A name past the bound, or a long one, is recorded at every listing,
	// but a pinned name is always held off (and a key with a pin, by
	// held): their calls are refused.
	if own || p.nOff < maxPins && len(name) <= maxPinName {
		if !off {
			names = map[string]string{}
			p.off[key] = names
		}
		names[name] = d
		p.nOff++
	}
	return v, true, pinned
}

// callable refuses a tools/call of name: the empty verdict (pinOK) lets
// it through. A tool is refused, under every spelling the policy takes
// for its name ([policy.NameKey]), while the last listing of any of those
// spellings was withheld; and a tool without a pin where none can be
// made: with a fixed set, or a trust-on-first-use set that is full or
// whose bound on names (maxPinName) the name exceeds, or for an empty
// name; and
// [InstructionsPin], whose pin is the instructions'. As a spelling not
// pinned itself cannot show a pin's definition, a key refused for one
// stays refused.
func (p *Pins) callable(name string) pinVerdict {
	if name == InstructionsPin {
		// The pin of the instructions is no tool's: it approves no call.
		return pinNotPinned
	}
	name = clientName(name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.off) > 0 || len(p.held) > 0 {
		key := pinKey(name)
		if _, off := p.off[key]; off || p.held[key] {
			if _, ok := p.pin[name]; ok || !p.fixed && p.keys[key] != "" {
				return pinChanged
			}
			return pinNotPinned
		}
	}
	if _, ok := p.pin[name]; !ok && (p.fixed || len(p.pin) >= maxPins || len(name) > maxPinName || name == "") {
		return pinNotPinned
	}
	return pinOK
}

// clientName returns name as a client reads it from JSON, and as
// [Pins.MarshalJSON] writes it: each byte of invalid UTF-8 (which a
// downstream may write raw in a listing) as U+FFFD, as encoding/json and
// the go-sdk decode it. Pinned under its raw bytes, the name would not be
// the one of the file [ParsePins] reads back, nor the one a client calls.
func clientName(name string) string {
	if utf8.ValidString(name) {
		return name
	}
	b := make([]byte, 0, len(name)+8)
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		b = utf8.AppendRune(b, r) // RuneError for each invalid byte
		i += n
	}
	return string(b)
}

// pinKey returns the key under which [Pins] know the tool name name:
// [policy.NameKey] of name cut at its first NUL, with each run of invalid
// UTF-8 and U+FFFD as one U+FFFD: the names some client reads alike. A
// reader that keeps strings as C strings (cJSON) reads "x\u0000y" as "x"
// (see cutNUL). Go reads each byte of invalid UTF-8 as U+FFFD, a WHATWG
// decoder (JavaScript's) each maximal invalid subpart: "x\xe2\x82" is
// "x\ufffd\ufffd" to one and "x\ufffd" to the other, the name of another
// tool to a client of either ("x\xe2", "x\ufffd\ufffd").
func pinKey(name string) string {
	name, _, _ = strings.Cut(name, "\x00")
	if utf8.ValidString(name) && !strings.ContainsRune(name, utf8.RuneError) {
		return policy.NameKey(name)
	}
	b := make([]byte, 0, len(name))
	run := false
	for _, r := range name {
		if r == utf8.RuneError {
			if !run {
				b = utf8.AppendRune(b, r)
			}
			run = true
			continue
		}
		run = false
		b = utf8.AppendRune(b, r)
	}
	return policy.NameKey(string(b))
}

// names returns the pinned names, sorted (for tests and logs).
func (p *Pins) names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.pin))
}
