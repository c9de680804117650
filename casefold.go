package mcpguard

import (
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
// field "amount" reads {"AMOUNT": 1e6} as amount 1e6. Where the schema
// admits members it does not declare (lenient mode, or an explicit
// additionalProperties or patternProperties), "AMOUNT" is such a member,
// and the schema's checks of "amount" (a maximum, say) never see it. So a
// member whose name differs from a declared property's only in letter case
// (Unicode simple folding, as encoding/json compares) is refused.
type caseNode struct {
	props  map[string]*caseNode
	folded map[string]string // folded name -> declared name
	extra  *caseNode         // additionalProperties, when a schema
	items  *caseNode
}

// caseBuilder builds the caseNode tree of a schema document.
type caseBuilder struct {
	root  map[string]any
	memo  map[uintptr]*caseNode
	admit bool // some schema that declares properties admits others
	lax   bool // lenient mode: a schema that does not say so admits them
}

// newCaseCheck returns the case check of schema doc (as written, before
// strict mode closes it), or nil when no object schema both declares
// properties and admits members it does not declare: strict mode then
// refuses every undeclared name already.
func newCaseCheck(doc any, lenient bool) *caseNode {
	root, _ := doc.(map[string]any)
	b := &caseBuilder{root: root, memo: map[uintptr]*caseNode{}, lax: lenient}
	n := b.build(doc)
	if !b.admit {
		return nil
	}
	return n
}

func (b *caseBuilder) build(v any) *caseNode {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	key := reflect.ValueOf(m).Pointer()
	if n, ok := b.memo[key]; ok {
		return n // a reference cycle: the node being built
	}
	n := &caseNode{props: map[string]*caseNode{}, folded: map[string]string{}}
	b.memo[key] = n
	b.merge(n, m, map[uintptr]bool{})
	if len(n.props) == 0 && n.extra == nil && n.items == nil {
		return nil
	}
	return n
}

// merge adds to n what schema m, and the schemas it applies in place
// (allOf, anyOf, oneOf, then, else, a local $ref), declare.
func (b *caseBuilder) merge(n *caseNode, m map[string]any, seen map[uintptr]bool) {
	key := reflect.ValueOf(m).Pointer()
	if seen[key] {
		return
	}
	seen[key] = true
	props, _ := m["properties"].(map[string]any)
	for name, sub := range props {
		if _, ok := n.props[name]; !ok {
			n.props[name] = b.build(sub)
		}
		n.folded[string(foldkey.Append(nil, []byte(name)))] = name
	}
	if len(props) > 0 && b.admits(m) {
		b.admit = true
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok && n.extra == nil {
		n.extra = b.build(ap)
	}
	if it, ok := m["items"].(map[string]any); ok && n.items == nil {
		n.items = b.build(it)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := m[k].([]any)
		for _, sub := range list {
			if sm, ok := sub.(map[string]any); ok {
				b.merge(n, sm, seen)
			}
		}
	}
	for _, k := range []string{"then", "else"} {
		if sm, ok := m[k].(map[string]any); ok {
			b.merge(n, sm, seen)
		}
	}
	if ref, ok := m["$ref"].(string); ok {
		if sm, ok := b.resolve(ref).(map[string]any); ok {
			b.merge(n, sm, seen)
		}
	}
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

// resolve returns the schema a local reference ("#", "#/$defs/x") names
// in the document, or nil.
func (b *caseBuilder) resolve(ref string) any {
	if ref == "#" {
		return b.root
	}
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = b.root
	for _, tok := range strings.Split(p, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[tok]
	}
	return cur
}

// check refuses in doc, decoded arguments at path, a member whose name
// differs from a property n declares only in letter case (see caseNode).
// Of several, the first by path is named.
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
				if p, ok := n.folded[string(foldkey.Append(nil, []byte(k)))]; ok {
					at := append(path, k)
					return invalidArgs(fieldName(at)+" differs from the declared argument "+quoteName(p)+" only in letter case", pointer(at))
				}
				sub = n.extra
			}
			if err := sub.check(x[k], append(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := n.items.check(e, append(path, strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}
