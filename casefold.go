package mcpguard

import (
	"errors"
	"reflect"
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
// not, since a handler may read it either way. The values of members
// matching patternProperties are checked against every patternProperties
// schema (the check may see more declared names there, never fewer).
type caseNode struct {
	props  map[string]*caseNode
	folded map[string]string // folded name -> declared name
	extra  *caseNode         // additionalProperties, when a schema
	prefix []*caseNode       // array elements by index (prefixItems, tuple items)
	items  *caseNode         // array elements past prefix
}

// caseBuilder builds the caseNode tree of a schema document. A node stands
// for the set of schemas that apply at a position (memo is keyed by that
// set), so that two schemas naming the same property (one beside an allOf
// that names it too) both contribute to the property's node.
type caseBuilder struct {
	root    map[string]any
	anchors map[string]map[string]any // $anchor, $dynamicAnchor -> schema
	memo    map[string]*caseNode
	admit   bool // some schema that declares properties admits others
	applied bool // some schema applies others in place (allOf, $ref, not...)
	decl    bool // some schema declares properties
	tooMany bool // more than maxCaseNodes positions
	lax     bool // lenient mode: a schema that does not say so admits them
}

// newCaseCheck returns the case check of schema doc (as written, before
// strict mode closes it), or nil when no object schema both declares
// properties and admits members it does not declare: strict mode then
// refuses every undeclared name already. A schema whose positions would
// take more than maxCaseNodes nodes is refused (fail closed): unions of
// schemas at a position can in principle multiply them.
func newCaseCheck(doc any, lenient bool) (*caseNode, error) {
	root, _ := doc.(map[string]any)
	b := &caseBuilder{root: root, anchors: map[string]map[string]any{}, memo: map[string]*caseNode{}, lax: lenient}
	b.findAnchors(doc)
	n := b.node(schemaList(doc))
	// Strict mode closes no schema below an in-place applicator (see
	// closeObjects): where one applies, a declared name's case variant may
	// be admitted, so the check is kept. Such a schema is outside the fast
	// path's subset: no decode is added there.
	if b.tooMany {
		return nil, errors.New("mcpguard: schema too complex: its object positions cannot be listed for the letter-case check")
	}
	if !b.admit && !(b.applied && b.decl) {
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

func (b *caseBuilder) findAnchors(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range []string{"$anchor", "$dynamicAnchor"} {
			if a, ok := x[k].(string); ok {
				if _, dup := b.anchors[a]; !dup {
					b.anchors[a] = x
				}
			}
		}
		for _, sub := range x {
			b.findAnchors(sub)
		}
	case []any:
		for _, sub := range x {
			b.findAnchors(sub)
		}
	}
}

// node returns the node of the position where the schemas of set (and
// those they apply in place) apply, or nil when they declare nothing there
// or below.
func (b *caseBuilder) node(set []map[string]any) *caseNode {
	var all []map[string]any
	seen := map[uintptr]bool{}
	for _, m := range set {
		all = b.inPlace(all, m, seen)
	}
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
	slices.Sort(ptrs)
	var kb strings.Builder
	for _, p := range ptrs {
		kb.WriteString(strconv.FormatUint(uint64(p), 36))
		kb.WriteByte(',')
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
		every = append(every, schemaList(m["contains"])...)
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
	if !someIndex {
		n.prefix = nil
	}
	if len(n.props) == 0 && n.extra == nil && n.items == nil && n.prefix == nil {
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
			if sm, ok := b.resolve(ref).(map[string]any); ok {
				b.applied = true
				all = b.inPlace(all, sm, seen)
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

// resolve returns the schema a local reference ("#", "#/$defs/x", "#anchor",
// each possibly after the root's $id) names in the document, or nil.
func (b *caseBuilder) resolve(ref string) any {
	if id, ok := b.root["$id"].(string); ok && id != "" {
		ref = strings.TrimPrefix(ref, strings.TrimSuffix(id, "#"))
	}
	if ref == "#" || ref == "" {
		return b.root
	}
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		if a, ok := strings.CutPrefix(ref, "#"); ok {
			if m, ok := b.anchors[a]; ok {
				return m
			}
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
// case, '_' or '-' (see caseNode). Of several, the first by path is named.
func (n *caseNode) check(doc any, path []string) error {
	if n == nil {
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
			sub, declared := n.props[k]
			if !declared {
				if p, ok := n.folded[string(foldkey.AppendName(nil, []byte(k)))]; ok {
					at := append(path, k)
					return invalidArgs(fieldName(at)+" differs from the declared argument "+quoteName(p)+" only in letter case, '_' or '-'", pointer(at))
				}
				sub = n.extra
			}
			if err := sub.check(x[k], append(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			sub := n.items
			if i < len(n.prefix) {
				sub = n.prefix[i]
			}
			if err := sub.check(e, append(path, strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}
