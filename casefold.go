package mcpguard

import (
	"errors"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpguard/mcpguard/internal/foldkey"
)

// A caseNode is what the case check knows of the object schemas that
// apply at one position of the arguments: the properties they declare, by
// name and by folded name, the schemas of those properties' values, of
// other members' values (additionalProperties) and of array items.
//
// encoding/json matches a member to a struct field regardless of letter
// case, so a raw handler that decodes the arguments into a struct with a
// field "amount" reads {"AMOUNT": 1e6} as amount 1e6; encoding/json/v2's
// case-insensitive matching (MatchCaseInsensitiveNames, a `case:ignore`
// tag) also ignores '_' and '-', and reads {"a_mount": 1e6} so. Where the
// schema admits members it does not declare (lenient mode, or an explicit
// additionalProperties or patternProperties), "AMOUNT" and "a_mount" are
// such members, and the schema's checks of "amount" (a maximum, say) never
// see them. So a member whose name is not declared but differs from a
// declared property's only in letter case (Unicode simple folding, as
// encoding/json compares), '_' or '-' (foldkey.AppendName) is refused; a
// declared name never is, whatever other declared names it resembles
// ("user_id" and "userid" both declared: checkKeys refuses them together).
// A name counts as declared wherever any schema applying at the position
// declares it, in place (allOf, anyOf, oneOf, not, if/then/else,
// dependentSchemas, local $ref, $recursiveRef, $dynamicRef, anchors) or
// not, since a handler may read it either way. The values of undeclared
// members are checked against every patternProperties schema (the check
// may see more declared names there, never fewer); a declared member's
// value against every schema the validator applies to it: those that
// declare it, the patternProperties schemas whose pattern matches its
// name, and the additionalProperties and unevaluatedProperties of a
// schema applying beside them that does not declare it.
//
// A reference the check cannot follow (one to another resource, or any
// reference in a document that embeds resources with their own "$id", or
// draft 4's "id", whose references resolve against those) hides what its
// target declares, there and below. Such a position, and every position
// below it, is blind: there a member is also refused when its name is
// declared nowhere in the document but differs only so from a name
// declared somewhere in it (the validator resolves the reference, so the
// target's checks apply to the declared name and not to its variant).
type caseNode struct {
	props  map[string]*caseNode
	folded map[string]string // folded name -> declared name
	extra  *caseNode         // additionalProperties, when a schema
	prefix []*caseNode       // array elements by index (prefixItems, tuple items)
	items  *caseNode         // array elements past prefix
	// blind is the document's names when a reference the check cannot
	// follow applies here (see caseNode), else nil.
	blind *caseNames
}

// caseNames are the property names a schema document declares anywhere.
type caseNames struct {
	declared map[string]bool
	folded   map[string]string // folded name -> the smallest declared name
}

// caseBuilder builds the caseNode tree of a schema document. A node stands
// for the set of schemas that apply at a position (memo is keyed by that
// set), so that two schemas naming the same property (one beside an allOf
// that names it too) both contribute to the property's node.
type caseBuilder struct {
	root    map[string]any
	anchors map[string]map[string]any // $anchor, $dynamicAnchor -> schema
	memo    map[string]*caseNode
	names   caseNames // every name the document declares
	admit   bool      // some schema that declares properties admits others
	applied bool      // some schema applies others in place (allOf, $ref, not...) or through contains
	decl    bool      // some schema declares properties
	tooMany bool      // more than maxCaseNodes positions
	lax     bool      // lenient mode: a schema that does not say so admits them
	// embedded: the document embeds resources with their own $id, against
	// which their references resolve; the check follows none.
	embedded bool
	// unfollowed: inPlace met a reference it cannot follow (reset by node
	// for each position); blind: some position has one.
	unfollowed, blind bool
	patterns          map[string]*regexp.Regexp // patternProperties compiled (nil: regexp refuses it)
}

// matches reports whether the patternProperties pattern pat matches name,
// as the validator's default engine (regexp, unanchored) decides; a
// pattern regexp does not compile counts as matching.
func (b *caseBuilder) matches(pat, name string) bool {
	re, ok := b.patterns[pat]
	if !ok {
		re, _ = regexp.Compile(pat)
		if b.patterns == nil {
			b.patterns = map[string]*regexp.Regexp{}
		}
		b.patterns[pat] = re
	}
	return re == nil || re.MatchString(name)
}

// newCaseCheck returns the case check of schema doc (as written, before
// strict mode closes it), or nil when no object schema both declares
// properties and admits members it does not declare, and no reference
// the check cannot follow hides one that might: strict mode then refuses
// every undeclared name already. A schema whose positions would take more
// than maxCaseNodes nodes is refused (fail closed): unions of schemas at a
// position can in principle multiply them.
func newCaseCheck(doc any, lenient bool) (*caseNode, error) {
	root, _ := doc.(map[string]any)
	b := &caseBuilder{root: root, anchors: map[string]map[string]any{}, memo: map[string]*caseNode{}, lax: lenient,
		names: caseNames{declared: map[string]bool{}, folded: map[string]string{}}}
	b.index(doc)
	b.embedded = hasNestedID(root, true) || hasNestedDraft4ID(root, true)
	n := b.node(schemaList(doc))
	// Strict mode closes no schema below an in-place applicator or
	// contains (see closeObjects): where one applies, a declared name's
	// case variant may be admitted, so the check is kept. Such a schema
	// is outside the fast path's subset: no decode is added there.
	if b.tooMany {
		return nil, errors.New("mcpguard: schema too complex: its object positions cannot be listed for the letter-case check")
	}
	if !b.admit && !(b.applied && b.decl) && !b.blind {
		return nil, nil
	}
	return n, nil
}

// maxCaseNodes bounds the nodes of a case check.
var maxCaseNodes = 1 << 15

// tupleList returns the schemas of a tuple, a boolean one as an empty
// schema so that the indexes stay aligned.
func tupleList(list []any) []map[string]any {
	out := make([]map[string]any, len(list))
	for i, v := range list {
		out[i], _ = v.(map[string]any)
		if out[i] == nil {
			out[i] = map[string]any{}
		}
	}
	return out
}

func schemaList(v any) []map[string]any {
	if m, ok := v.(map[string]any); ok {
		return []map[string]any{m}
	}
	return nil
}

// index records the anchors of the schemas in v and the property
// names they declare (in b.names), leaving out the values of the keywords
// that hold instances, not schemas.
func (b *caseBuilder) index(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range []string{"$anchor", "$dynamicAnchor"} {
			if a, ok := x[k].(string); ok {
				if _, dup := b.anchors[a]; !dup {
					b.anchors[a] = x
				}
			}
		}
		if props, ok := x["properties"].(map[string]any); ok {
			for name := range props {
				b.names.declared[name] = true
				f := string(foldkey.AppendName(nil, []byte(name)))
				if p, ok := b.names.folded[f]; !ok || name < p {
					b.names.folded[f] = name
				}
			}
		}
		for k, sub := range x {
			switch k {
			case "const", "enum", "default", "examples":
				continue
			}
			b.index(sub)
		}
	case []any:
		for _, sub := range x {
			b.index(sub)
		}
	}
}

// node returns the node of the position where the schemas of set (and
// those they apply in place) apply, or nil when they declare nothing there
// or below.
func (b *caseBuilder) node(set []map[string]any) *caseNode {
	var all []map[string]any
	seen := map[uintptr]bool{}
	b.unfollowed = false
	for _, m := range set {
		all = b.inPlace(all, m, seen)
	}
	blind := b.unfollowed
	// The key names only the schemas that say something here: two sets
	// that differ in $ref or allOf wrappers alone share a node.
	ptrs := make([]uintptr, 0, len(all))
	for _, m := range all {
		for _, k := range caseKeywords {
			if _, ok := m[k]; ok {
				ptrs = append(ptrs, reflect.ValueOf(m).Pointer())
				break
			}
		}
	}
	if len(ptrs) == 0 && !blind {
		// No schema here names a member or an element: nothing is
		// declared here or below. (Built as a node, the empty set would
		// be its own additionalProperties and items, walked for nothing.)
		return nil
	}
	slices.Sort(ptrs)
	var kb strings.Builder
	for _, p := range ptrs {
		kb.WriteString(strconv.FormatUint(uint64(p), 36))
		kb.WriteByte(',')
	}
	if blind {
		kb.WriteByte('!')
	}
	key := kb.String()
	if n, ok := b.memo[key]; ok {
		return n // built, or being built (a reference cycle)
	}
	if len(b.memo) >= maxCaseNodes {
		b.tooMany = true
		return nil
	}
	n := &caseNode{props: map[string]*caseNode{}, folded: map[string]string{}}
	if blind && len(b.names.folded) > 0 {
		n.blind = &b.names
		b.blind = true
	}
	b.memo[key] = n
	propSets := map[string][]map[string]any{}
	var extra, items, every []map[string]any
	type tuple struct{ head, rest []map[string]any }
	var tuples []tuple
	for _, m := range all {
		props, _ := m["properties"].(map[string]any)
		for name, sub := range props {
			propSets[name] = append(propSets[name], schemaList(sub)...)
			f := string(foldkey.AppendName(nil, []byte(name)))
			// Of several declared names that fold alike, the smallest is
			// named, whatever the order of the map.
			if p, ok := n.folded[f]; !ok || name < p {
				n.folded[f] = name
			}
		}
		b.decl = b.decl || len(props) > 0
		if len(props) > 0 && b.admits(m) {
			b.admit = true
		}
		// Members not declared: additionalProperties, unevaluatedProperties
		// and every patternProperties value (whether its pattern matches
		// or not: the check may then see more declared names, never fewer).
		extra = append(extra, schemaList(m["additionalProperties"])...)
		extra = append(extra, schemaList(m["unevaluatedProperties"])...)
		if pp, ok := m["patternProperties"].(map[string]any); ok {
			for _, sub := range pp {
				extra = append(extra, schemaList(sub)...)
			}
		}
		// Array elements: a tuple (prefixItems, or items as an array in
		// drafts before 2020-12) by index, then items or additionalItems
		// past it; unevaluatedItems and contains at every index.
		var tp tuple
		if pi, ok := m["prefixItems"].([]any); ok {
			tp.head = tupleList(pi)
			tp.rest = schemaList(m["items"])
		} else if it, ok := m["items"].([]any); ok {
			tp.head = tupleList(it)
			tp.rest = schemaList(m["additionalItems"])
		} else {
			tp.rest = schemaList(m["items"])
		}
		tuples = append(tuples, tp)
		items = append(items, tp.rest...)
		every = append(every, schemaList(m["unevaluatedItems"])...)
		if c := schemaList(m["contains"]); len(c) > 0 {
			// Strict mode closes nothing below a filter: an object
			// schema there admits undeclared names, as below allOf.
			b.applied = true
			every = append(every, c...)
		}
	}
	// A declared member's value is checked by more than the schemas that
	// declare it: by every patternProperties schema whose pattern matches
	// its name, and, in a schema that applies here without declaring it
	// (an allOf branch beside the one that does), by that schema's
	// additionalProperties (unless one of its patterns matches) and
	// unevaluatedProperties.
	for name := range propSets {
		for _, m := range all {
			props, _ := m["properties"].(map[string]any)
			_, own := props[name]
			matched := false
			pp, _ := m["patternProperties"].(map[string]any)
			for pat, sub := range pp {
				if b.matches(pat, name) {
					matched = true
					propSets[name] = append(propSets[name], schemaList(sub)...)
				}
			}
			if !own {
				if !matched {
					propSets[name] = append(propSets[name], schemaList(m["additionalProperties"])...)
				}
				propSets[name] = append(propSets[name], schemaList(m["unevaluatedProperties"])...)
			}
		}
	}
	for name, s := range propSets {
		n.props[name] = b.node(s)
	}
	n.extra = b.node(extra)
	n.items = b.node(append(items, every...))
	long := 0
	for _, tp := range tuples {
		long = max(long, len(tp.head))
	}
	someIndex := false
	for i := range long {
		set := slices.Clone(every)
		for _, tp := range tuples {
			if i < len(tp.head) {
				set = append(set, tp.head[i])
			} else {
				set = append(set, tp.rest...)
			}
		}
		sub := b.node(set)
		n.prefix = append(n.prefix, sub)
		someIndex = someIndex || sub != nil
	}
	if !someIndex && n.items == nil {
		// No element has a node: none needs a walk. (Beside items, an
		// index without one stays, so that items, which do not apply
		// there, are not checked there.)
		n.prefix = nil
	}
	if len(n.props) == 0 && n.extra == nil && n.items == nil && n.prefix == nil && n.blind == nil {
		return nil
	}
	return n
}

// caseKeywords are those a node is built from.
var caseKeywords = []string{"properties", "additionalProperties", "unevaluatedProperties", "patternProperties",
	"items", "prefixItems", "additionalItems", "unevaluatedItems", "contains"}

// inPlace appends to all schema m and the schemas it applies in place
// (allOf, anyOf, oneOf, not, if, then, else, dependentSchemas, the schemas
// of draft-07 dependencies, a local $ref, $recursiveRef or $dynamicRef):
// a name any of them declares is one a handler may read.
func (b *caseBuilder) inPlace(all []map[string]any, m map[string]any, seen map[uintptr]bool) []map[string]any {
	key := reflect.ValueOf(m).Pointer()
	if seen[key] {
		return all
	}
	seen[key] = true
	all = append(all, m)
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := m[k].([]any)
		for _, sub := range list {
			if sm, ok := sub.(map[string]any); ok {
				b.applied = true
				all = b.inPlace(all, sm, seen)
			}
		}
	}
	for _, k := range []string{"not", "if", "then", "else"} {
		if sm, ok := m[k].(map[string]any); ok {
			b.applied = true
			all = b.inPlace(all, sm, seen)
		}
	}
	for _, k := range []string{"dependentSchemas", "dependencies"} {
		deps, _ := m[k].(map[string]any)
		for _, sub := range deps {
			if sm, ok := sub.(map[string]any); ok {
				b.applied = true
				all = b.inPlace(all, sm, seen)
			}
		}
	}
	for _, k := range []string{"$ref", "$recursiveRef", "$dynamicRef"} {
		if ref, ok := m[k].(string); ok {
			switch t := b.resolve(ref).(type) {
			case map[string]any:
				b.applied = true
				all = b.inPlace(all, t, seen)
			case nil:
				b.unfollowed = true
			}
		}
	}
	return all
}

// admits reports whether schema m, which declares properties, admits
// members it does not declare.
func (b *caseBuilder) admits(m map[string]any) bool {
	if _, ok := m["patternProperties"]; ok {
		return true
	}
	for _, k := range []string{"additionalProperties", "unevaluatedProperties"} {
		if v, ok := m[k]; ok {
			if f, isBool := v.(bool); !isBool || f {
				return true
			}
		}
	}
	_, closed := m["additionalProperties"]
	_, uclosed := m["unevaluatedProperties"]
	return b.lax && !closed && !uclosed
}

// hasNestedDraft4ID reports whether v holds, below its top level, an "id"
// whose value is a string: in draft 4 a resource embedded with its own id
// (in later drafts a keyword the validator ignores; a property named id
// has a schema, not a string, as its value).
func hasNestedDraft4ID(v any, top bool) bool {
	return anyBelow(v, top, func(m map[string]any) bool {
		_, ok := m["id"].(string)
		return ok
	})
}

// anyBelow reports whether an object in v below its top level (at it too
// when top is false) satisfies f.
func anyBelow(v any, top bool, f func(map[string]any) bool) bool {
	switch x := v.(type) {
	case map[string]any:
		if !top && f(x) {
			return true
		}
		for _, sub := range x {
			if anyBelow(sub, false, f) {
				return true
			}
		}
	case []any:
		for _, sub := range x {
			if anyBelow(sub, false, f) {
				return true
			}
		}
	}
	return false
}

// resolve returns the schema a local reference ("#", "#/$defs/x", "#anchor",
// each possibly after the root's $id; the fragment percent-encoded or not)
// names in the document, or nil for one it cannot follow (another
// resource, a bad pointer, or any reference in a document that embeds
// resources: see caseBuilder.embedded).
func (b *caseBuilder) resolve(ref string) any {
	if b.embedded {
		return nil
	}
	if id, ok := b.root["$id"].(string); ok && id != "" {
		ref = strings.TrimPrefix(ref, strings.TrimSuffix(id, "#"))
	}
	if ref == "#" || ref == "" {
		return b.root
	}
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil
	}
	if frag == "" {
		return b.root
	}
	p, ok := strings.CutPrefix(frag, "/")
	if !ok {
		if m, ok := b.anchors[frag]; ok {
			return m
		}
		return nil
	}
	var cur any = b.root
	for _, tok := range strings.Split(p, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// check refuses in doc, decoded arguments at path, a member whose name n
// does not declare but differs from a property n declares only in letter
// case, '_' or '-', and at a blind position one whose name the document
// declares nowhere but differs so from one it declares (see caseNode). Of
// several, the first by path is named.
func (n *caseNode) check(doc any, path []string) error { return n.checkBlind(doc, path, nil) }

// checkBlind is check below a blind position (blind, the document's names,
// non-nil) or not.
func (n *caseNode) checkBlind(doc any, path []string, blind *caseNames) error {
	if n != nil && n.blind != nil {
		blind = n.blind
	}
	if n == nil && blind == nil {
		return nil
	}
	switch x := doc.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			var sub *caseNode
			declared := false
			if n != nil {
				sub, declared = n.props[k]
			}
			if !declared {
				f := foldkey.AppendName(nil, []byte(k))
				p, ok := "", false
				if n != nil {
					p, ok = n.folded[string(f)]
				}
				if !ok && blind != nil && !blind.declared[k] {
					p, ok = blind.folded[string(f)]
				}
				if ok {
					at := append(path, k)
					return invalidArgs(fieldName(at)+" differs from the declared argument "+quoteName(p)+" only in letter case, '_' or '-'", pointer(at))
				}
				if n != nil {
					sub = n.extra
				}
			}
			if err := sub.checkBlind(x[k], append(path, k), blind); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			var sub *caseNode
			if n != nil {
				sub = n.items
				if i < len(n.prefix) {
					sub = n.prefix[i]
				}
			}
			if err := sub.checkBlind(e, append(path, strconv.Itoa(i)), blind); err != nil {
				return err
			}
		}
	}
	return nil
}
