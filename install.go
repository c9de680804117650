package mcpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"weak"

	"github.com/mcpguard/mcpguard/internal/jsondepth"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A toolEntry is a tool's compiled guard state. What it holds does not
// depend on the policy, which [Guard.SetPolicy] may replace: the checks of
// the tool that do are made against the policy a call or a listing loaded
// (see check).
type toolEntry struct {
	tool *mcp.Tool
	in   *Validator
	out  *Validator
	// early and late are the failures of the registration checks that do
	// not depend on the policy, before and after the one that does
	// (binds): the tool is refused, fail closed.
	early, late error
	hint        *bool // the tool's ReadOnlyHint; nil without Annotations
	binds       bool  // its input schema binds arguments to HTTP headers
	// okUnder is the last policy under which check passed.
	okUnder atomic.Pointer[policy.Policy]
	// raw says that the handler is a raw one ([Guard.Wrap]): no error of
	// its is the go-sdk's typed-tool wrapper's refusal of the arguments.
	raw bool
	// ui lists the UI resources the tool names in its _meta (MCP Apps;
	// see resources.go).
	ui []string
	// ints is the input schema, as JSON, of a tool that has an "integer"
	// type in it, whose calls' integers beyond 2^53 are refused (see
	// wideints.go); nil for another.
	ints map[string]any
	// fields are the only top-level argument names a call of the tool can
	// carry, by its input schema; nil when the schema does not say so
	// plainly (see closedFields).
	fields map[string]bool
}

// check returns the first of compile's checks that e's tool fails under
// the policy p, in compile's order, or nil: a tool that fails one is
// refused (every call TOOL_NOT_FOUND, absent from listings).
func (e *toolEntry) check(p *policy.Policy) error {
	if e.okUnder.Load() == p {
		return nil
	}
	if err := p.CheckTool(e.tool.Name, e.hint); err != nil {
		return fmt.Errorf("mcpguard: %w", err)
	}
	if e.early != nil {
		return e.early
	}
	if e.binds && !p.Visible(&policy.Principal{}, e.tool.Name) {
		return fmt.Errorf("mcpguard: tool %q binds arguments to HTTP headers (x-mcp-header) and the policy hides it from some callers: "+
			"the go-sdk checks those headers against the tool before any middleware, so its answer would tell the tool from an unknown one; "+
			"make the tool visible to every caller or drop the annotation", e.tool.Name)
	}
	if e.late != nil {
		return e.late
	}
	// A limit of the tool's own rule (a default rule's may be meant for
	// other tools) on an argument the tool cannot be sent. (The rule is
	// the tool's own when it has its name: a folded match has another's,
	// the default rule none. p.Tools() would sort every rule's name, for
	// each tool.)
	if e.fields != nil {
		if r, ok := p.Resolve(e.tool.Name); ok && r.Name == e.tool.Name {
			for _, l := range r.ArgLimits {
				if !e.fields[l.Field] {
					return fmt.Errorf("mcpguard: tool %q: the policy limits argument %q, which its input schema does not have (it has %s): "+
						"no call can carry it, and every caller the limit applies to would be refused; name the argument as the schema does",
						e.tool.Name, l.Field, fieldList(e.fields))
				}
			}
		}
	}
	e.okUnder.Store(p)
	return nil
}

// fieldList lists the names of fields, sorted and quoted.
func fieldList(fields map[string]bool) string {
	if len(fields) == 0 {
		return "none"
	}
	names := slices.Sorted(maps.Keys(fields))
	for i, n := range names {
		names[i] = strconv.Quote(n)
	}
	return strings.Join(names, ", ")
}

// closedFields returns the top-level property names of schema, an input
// schema, when they are all a call can carry: an object schema with
// "properties" and nothing else that admits or defines members
// (patternProperties, additionalProperties but false, unevaluatedProperties
// but false, dependentSchemas, a combinator or a reference), whose
// undeclared members strict mode (or additionalProperties false) refuses;
// unevaluatedProperties false alone does not count as closing it, as the
// drafts before 2020-12 ignore it.
// Otherwise nil: the schema does not say plainly.
func closedFields(schema any, strict bool) map[string]bool {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var props map[string]json.RawMessage
	if json.Unmarshal(m["properties"], &props) != nil || props == nil {
		return nil
	}
	closed := strict
	for k, v := range m {
		switch k {
		case "additionalProperties":
			if string(v) != "false" {
				return nil
			}
			closed = true
		case "unevaluatedProperties":
			// Closes in draft 2020-12 only; earlier drafts ignore it.
			if string(v) != "false" {
				return nil
			}
		case "patternProperties", "dependentSchemas", "dependencies", "allOf", "anyOf", "oneOf", "not",
			"if", "then", "else", "$ref", "$dynamicRef", "$recursiveRef":
			return nil
		}
	}
	if !closed {
		return nil
	}
	fields := make(map[string]bool, len(props))
	for k := range props {
		fields[k] = true
	}
	return fields
}

// checkOutput checks the structured content of res, a successful result,
// against e's output schema, after its size: over max bytes (a negative max
// is no cap) it is refused unread (see [Options].MaxOutputBytes).
func (e *toolEntry) checkOutput(res *mcp.CallToolResult, max int) error {
	if res.StructuredContent == nil {
		return errors.New("no structured content although the tool has an output schema")
	}
	if err := structuredSize(res.StructuredContent, max); err != nil {
		return err
	}
	raw, err := marshal(res.StructuredContent)
	if err != nil {
		return errors.New("structured content does not marshal")
	}
	if max >= 0 && len(raw) > max {
		return &tooLarge{part: "structured content", n: len(raw), max: max}
	}
	if !utf8.Valid(raw) {
		// Bytes (a json.RawMessage) reach the wire as they are, while the
		// decoder below reads each invalid byte as U+FFFD: a client that
		// decodes them otherwise would read what was never checked.
		return errors.New("structured content is not UTF-8")
	}
	if nestedTooDeep(raw) {
		return errNestedOutput("structured content")
	}
	doc, err := decodeResult(raw)
	if err != nil {
		return err
	}
	return e.out.ValidateValue(doc)
}

// defaultMaxOutput is [Options].MaxOutputBytes's 0.
const defaultMaxOutput = 4 << 20

// A tooLarge refuses a result over [Options].MaxOutputBytes.
type tooLarge struct {
	part   string // "structured content" or "content"
	n, max int
}

func (e *tooLarge) Error() string {
	return e.part + " of " + strconv.Itoa(e.n) + " bytes, over the cap of " + strconv.Itoa(e.max) + " (MaxOutputBytes)"
}

// checkResult checks res, the result of a call of e's tool, as step 11
// does: that the go-sdk can encode it, and its size against max bytes (a
// negative max is no cap), then, for a successful result of a tool with an
// output schema, its structured content against the schema.
func (e *toolEntry) checkResult(res *mcp.CallToolResult, max int) error {
	n, err := restBytes(res)
	if err != nil {
		return err
	}
	if max >= 0 && n > max {
		return &tooLarge{part: "content", n: n, max: max}
	}
	if e.out != nil && !res.IsError && res.InputRequests == nil {
		return e.checkOutput(res, max)
	}
	return structuredEncodes(res.StructuredContent, max)
}

// structuredEncodes refuses structured content v that the go-sdk could not
// encode (it would send no answer at all), that it would send as bytes
// that are not UTF-8 (a json.RawMessage holds its bytes as they are; a
// client may not read the answer) or nested more than maxOutputDepth
// levels deep, or whose encoding has over max bytes (a negative max is no
// cap).
func structuredEncodes(v any, max int) error {
	if v == nil {
		return nil
	}
	if err := structuredSize(v, max); err != nil {
		return err
	}
	if raw, ok := v.(json.RawMessage); ok {
		if raw != nil && !json.Valid(raw) {
			return errors.New("structured content is not valid JSON")
		}
		if !utf8.Valid(raw) {
			return errors.New("structured content is not UTF-8")
		}
		if nestedTooDeep(raw) {
			return errNestedOutput("structured content")
		}
		return nil
	}
	// A value the go-sdk will encode: its encoding is what is sent.
	raw, err := marshal(v)
	if err != nil {
		return errors.New("structured content does not marshal")
	}
	if max >= 0 && len(raw) > max {
		return &tooLarge{part: "structured content", n: len(raw), max: max}
	}
	if !utf8.Valid(raw) {
		// A json.RawMessage in it, sent as its bytes are.
		return errors.New("structured content is not UTF-8")
	}
	if nestedTooDeep(raw) {
		return errNestedOutput("structured content")
	}
	return nil
}

// maxOutputDepth bounds the nesting of each encoded part of a tool's result
// (its structured content, a _meta, its input requests): go-sdk v1.8.0's
// client refuses a JSON-RPC message nested more than 1000 levels deep and
// closes its session, and a part sits a few levels down in the answer.
const maxOutputDepth = 512

// nestedTooDeep reports whether raw, encoded JSON, nests objects and arrays
// more than maxOutputDepth levels deep.
func nestedTooDeep(raw []byte) bool { return jsondepth.Of(raw) > maxOutputDepth }

// errNestedOutput refuses a part of a result nested too deeply.
func errNestedOutput(part string) error {
	return errors.New(part + " is nested more than " + strconv.Itoa(maxOutputDepth) + " levels deep")
}

// structuredSize refuses structured content v that is encoded JSON (a
// json.RawMessage) longer than max bytes (a negative max is no cap).
func structuredSize(v any, max int) error {
	if raw, ok := v.(json.RawMessage); ok && max >= 0 && len(raw) > max {
		return &tooLarge{part: "structured content", n: len(raw), max: max}
	}
	return nil
}

// restBytes returns the bytes of res but its structured content, as
// [Options].MaxOutputBytes counts them: the payloads of its content blocks
// (texts; image and audio data and an embedded resource's blob before
// base64; MIME types and URIs), the JSON of their _meta and annotations,
// and of res's own _meta and input requests, its request state, and the
// JSON of a resource link or a block of a kind a tool result does not
// carry (a sampling message's tool use or result). It fails on a part the
// go-sdk could not encode (or would panic encoding: see marshal), or would
// send as bytes that are not UTF-8 (a json.RawMessage in it: encoding/json
// checks that one is JSON, not that it is UTF-8; a Go string's invalid
// bytes it sends as U+FFFD), or on one nested more than maxOutputDepth
// levels deep. It fails on a content block
// that is nil, or a nil pointer (a nil *mcp.TextContent): go-sdk v1.8.0
// sends a nil one as null, which its client cannot read, and panics
// encoding a nil pointer in a result's content, which ends the process.
func restBytes(res *mcp.CallToolResult) (int, error) {
	n := 0
	add := func(v any) error {
		raw, err := marshal(v)
		if err != nil {
			return errors.New("the result does not marshal")
		}
		if !utf8.Valid(raw) {
			return errors.New("the result is not UTF-8 once encoded")
		}
		if nestedTooDeep(raw) {
			return errNestedOutput("the result")
		}
		n += len(raw)
		return nil
	}
	for _, c := range res.Content {
		if c == nil || nilPointer(c) {
			return 0, errors.New("a content block is nil")
		}
		var meta mcp.Meta
		var ann *mcp.Annotations
		switch c := c.(type) {
		case *mcp.TextContent:
			n += len(c.Text)
			meta, ann = c.Meta, c.Annotations
		case *mcp.ImageContent:
			n += len(c.Data) + len(c.MIMEType)
			meta, ann = c.Meta, c.Annotations
		case *mcp.AudioContent:
			n += len(c.Data) + len(c.MIMEType)
			meta, ann = c.Meta, c.Annotations
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil {
				n += len(r.URI) + len(r.MIMEType) + len(r.Text) + len(r.Blob)
				if len(r.Meta) > 0 {
					if err := add(r.Meta); err != nil {
						return 0, err
					}
				}
			}
			meta, ann = c.Meta, c.Annotations
		case *mcp.ResourceLink:
			if err := add(c); err != nil {
				return 0, err
			}
			continue
		default:
			if err := add(c); err != nil {
				return 0, err
			}
			continue
		}
		if len(meta) > 0 {
			if err := add(meta); err != nil {
				return 0, err
			}
		}
		if ann != nil {
			if err := add(ann); err != nil {
				return 0, err
			}
		}
	}
	n += len(res.RequestState)
	if len(res.Meta) > 0 {
		if err := add(res.Meta); err != nil {
			return 0, err
		}
	}
	if len(res.InputRequests) > 0 {
		if err := add(res.InputRequests); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// compile checks t against the policy now and compiles its schemas.
func (g *Guard) compile(t *mcp.Tool) (*toolEntry, error) {
	return g.compileUnder(g.pol.Load(), t)
}

// compileUnder checks t against the policy p and compiles its schemas.
func (g *Guard) compileUnder(p *policy.Policy, t *mcp.Tool) (*toolEntry, error) {
	if t == nil {
		return nil, errors.New("mcpguard: nil tool")
	}
	e := g.build(t)
	if err := e.check(p); err != nil {
		return nil, err
	}
	return e, nil
}

// build compiles the schemas of t, not nil, and makes the checks of it
// that do not depend on the policy, whose failures the entry keeps (see
// check).
func (g *Guard) build(t *mcp.Tool) *toolEntry {
	e := &toolEntry{tool: t}
	if t.Annotations != nil {
		h := t.Annotations.ReadOnlyHint
		e.hint = &h
	}
	e.early = earlyCheck(t)
	if e.early != nil {
		return e
	}
	e.binds = bindsHeaders(t.InputSchema)
	in, err := NewValidator(t.InputSchema, g.opts.Validation)
	if err != nil {
		e.late = fmt.Errorf("mcpguard: tool %q input schema: %w", t.Name, err)
		return e
	}
	e.in = in
	e.ints = intSchema(t.InputSchema)
	e.fields = closedFields(t.InputSchema, g.opts.Validation == nil || !g.opts.Validation.Lenient)
	if e.fields != nil {
		for _, f := range g.opts.Tools[t.Name].RecordArgs {
			if !e.fields[f] {
				e.in, e.late = nil, fmt.Errorf("mcpguard: tool %q: its RecordArgs (Options.Tools) names argument %q, which its input schema does not have (it has %s): "+
					"no call can carry it, so it would never be recorded; name the argument as the schema does", t.Name, f, fieldList(e.fields))
				return e
			}
		}
	}
	if t.OutputSchema != nil {
		out, err := newValidator(t.OutputSchema, outputValidation, false)
		if err != nil {
			e.in, e.late = nil, fmt.Errorf("mcpguard: tool %q output schema: %w", t.Name, err)
			return e
		}
		e.out = out
	}
	return e
}

// earlyCheck makes the checks of t, before its schemas are compiled, that
// do not depend on the policy.
func earlyCheck(t *mcp.Tool) error {
	// The records of a name over maxRecordedName bytes, or one CheckName
	// refuses (only a default rule gets this far with such a one), would
	// name no tool (recordedTool).
	if len(t.Name) > maxRecordedName {
		return fmt.Errorf("mcpguard: tool %.64q...: its name has %d bytes, over %d: the audit records of its calls could not name it", t.Name, len(t.Name), maxRecordedName)
	}
	if err := policy.CheckName(t.Name); err != nil {
		return fmt.Errorf("mcpguard: tool refused: %w: no rule could name it, and the audit records of its calls could not", err)
	}
	if t.InputSchema == nil {
		return fmt.Errorf("mcpguard: tool %q has no input schema", t.Name)
	}
	// Listed, a tool its callers' clients could not read would close
	// their sessions, or leave tools/list unanswered (see sendable).
	if err := sendableTool(t); err != nil {
		return fmt.Errorf("mcpguard: tool %q cannot be listed: %w", t.Name, err)
	}
	return nil
}

// bindsHeaders reports whether an input schema binds an argument to an
// HTTP header with an x-mcp-header annotation (SEP-2243) on a property at
// any depth, as go-sdk v1.8.0 reads them: through "properties" only. On
// protocol 2026-07-28 its Streamable HTTP server checks a tools/call's
// Mcp-Param-* headers against the tool so named before any middleware
// runs, and answers a mismatch with its own error, naming the header and
// the argument; for a name it has no tool of, it checks nothing.
//
// The schema is read key by key, every key seen (a duplicate too), and
// keys are matched under case folding: the go-sdk matches them exactly,
// encoding/json under folding, so this reads at least what either does. A
// key it does not follow is skipped whatever its value: a "Properties": 0
// beside "properties" must not hide the annotations (decoded into a
// struct, it failed the whole schema). A schema that cannot be read counts
// as binding (fail closed).
func bindsHeaders(schema any) bool {
	raw, err := json.Marshal(schema)
	if err != nil {
		return true // unreadable: fail closed (NewValidator refuses it too)
	}
	binds, err := schemaBinds(json.NewDecoder(bytes.NewReader(raw)), false)
	return binds || err != nil
}

// schemaBinds reads one schema from d and reports whether it binds a
// header: as a property's schema (prop) by an x-mcp-header key of its own,
// or through the schemas of its "properties". It may stop reading early.
func schemaBinds(d *json.Decoder, prop bool) (bool, error) {
	tok, err := d.Token()
	if err != nil {
		return false, err
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		// A boolean or other non-object schema binds nothing.
		return false, skipRest(d, tok)
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return false, err
		}
		key, _ := k.(string)
		switch {
		case prop && strings.EqualFold(key, "x-mcp-header"):
			return true, nil
		case strings.EqualFold(key, "properties"):
			if binds, err := propertiesBind(d); binds || err != nil {
				return binds, err
			}
		default:
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return false, err
			}
		}
	}
	_, err = d.Token() // '}'
	return false, err
}

// propertiesBind reads the value of a "properties" key from d and reports
// whether a property's schema binds a header.
func propertiesBind(d *json.Decoder) (bool, error) {
	tok, err := d.Token()
	if err != nil {
		return false, err
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		return false, skipRest(d, tok)
	}
	for d.More() {
		if _, err := d.Token(); err != nil { // the property's name
			return false, err
		}
		if binds, err := schemaBinds(d, true); binds || err != nil {
			return binds, err
		}
	}
	_, err = d.Token() // '}'
	return false, err
}

// skipRest reads from d the rest of the value whose first token was tok.
func skipRest(d *json.Decoder, tok json.Token) error {
	depth := 0
	for {
		if delim, ok := tok.(json.Delim); ok {
			if delim == '{' || delim == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
		var err error
		if tok, err = d.Token(); err != nil {
			return err
		}
	}
}

// registry caches the compiled tools of an installed server. Entries are
// keyed by name and remember the *mcp.Tool they were compiled from, so a
// replaced tool is recompiled.
type registry struct {
	mu     sync.RWMutex
	byName map[string]*toolEntry
	stale  bool      // the tools changed (invalidate)
	listed time.Time // when the tools were last listed (or a listing was claimed)
	// gen counts the changes (invalidate: a tools/list_changed
	// notification, or a call that found its tool removed). A listing is
	// installed only if none happened since it started: a listing that
	// read the tools before a change must not replace one that read them
	// after.
	gen uint64
}

// relist bounds how long the registry goes without listing the server's
// tools again. The go-sdk announces a changed tool list only to sessions
// that listen for it (older protocol versions, or a subscriptions/listen
// stream), and to none when no session is connected, so a tool replaced
// under the same name, or added under a new one, would otherwise go unseen.
// It also bounds how often calls to unknown names make the guard re-list,
// so probing names cannot amplify into work.
const relist = time.Second

func (r *registry) init() { r.byName = map[string]*toolEntry{} }

// lookup returns the entry for name (nil if there is none or the registry
// is stale) and whether the caller should re-list the tools first: after a
// tools/list_changed notification, or once relist has passed since the last
// listing, in which case one caller claims the listing; and the generation
// a listing made now starts from (see updateSince).
func (r *registry) lookup(name string, now time.Time) (e *toolEntry, refresh bool, gen uint64) {
	r.mu.RLock()
	e = r.byName[name]
	stale, due, gen := r.stale, now.Sub(r.listed) >= relist, r.gen
	r.mu.RUnlock()
	if stale {
		return nil, true, gen
	}
	if !due {
		return e, false, gen
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stale {
		return nil, true, r.gen // notified meanwhile
	}
	if now.Sub(r.listed) < relist {
		return e, false, r.gen // another caller claimed this listing
	}
	r.listed = now
	return e, true, r.gen
}

// invalidate marks the registry stale: the server's tools changed. A
// listing that started before is not installed (see updateSince).
func (r *registry) invalidate() {
	r.mu.Lock()
	r.stale = true
	r.gen++
	r.mu.Unlock()
}

func (r *registry) generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

func (r *registry) get(name string) (*toolEntry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.byName[name]
	return e, ok && !r.stale
}

// update replaces the registry with tools, recompiling only what changed.
func (g *Guard) update(tools []*mcp.Tool) {
	g.reg.mu.Lock()
	refused := g.install(tools)
	g.reg.mu.Unlock()
	g.logRefused(refused)
}

// updateSince is update for a listing that started at generation gen: it
// installs tools and reports true only if the tools did not change since
// (registry.invalidate).
func (g *Guard) updateSince(tools []*mcp.Tool, gen uint64) bool {
	g.reg.mu.Lock()
	if g.reg.gen != gen {
		g.reg.mu.Unlock()
		return false
	}
	refused := g.install(tools)
	g.reg.mu.Unlock()
	g.logRefused(refused)
	return true
}

// A refusedTool is a tool install found the policy refuses, to be logged
// once the registry's lock is given back: a log handler that blocks holds
// up the call that listed the tools, not every call.
type refusedTool struct {
	name string
	err  error
}

// install replaces the registry with tools; g.reg.mu is held. It returns
// the new tools the policy refuses.
func (g *Guard) install(tools []*mcp.Tool) (refused []refusedTool) {
	next := make(map[string]*toolEntry, len(tools))
	for _, t := range tools {
		if old, ok := g.reg.byName[t.Name]; ok && (old.tool == t || sameTool(old.tool, t)) {
			next[t.Name] = old
			continue
		}
		e := g.build(t)
		if err := e.check(g.pol.Load()); err != nil {
			refused = append(refused, refusedTool{t.Name, err})
		}
		e.ui = uiResources(t)
		next[t.Name] = e
	}
	g.reg.byName = next
	g.reg.stale = false
	g.reg.listed = time.Now()
	return refused
}

func (g *Guard) logRefused(refused []refusedTool) {
	for _, r := range refused {
		g.log.Error("mcpguard: tool refused: every call will be TOOL_NOT_FOUND", "tool", logName(r.name), "err", r.err)
	}
}

func sameTool(a, b *mcp.Tool) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// listAll pages through tools/list below the guard.
func listAll(ctx context.Context, next mcp.MethodHandler, ss *mcp.ServerSession) ([]*mcp.Tool, error) {
	tools, _, err := listPages(ctx, next, ss)
	return tools, err
}

// listPages is listAll that also returns the last page's result, whose
// other fields (result type, _meta) an answer of the guard's keeps.
func listPages(ctx context.Context, next mcp.MethodHandler, ss *mcp.ServerSession) ([]*mcp.Tool, *mcp.ListToolsResult, error) {
	var out []*mcp.Tool
	cursor := ""
	for range 1000 {
		res, err := next(ctx, "tools/list", &mcp.ListToolsRequest{Session: ss, Params: &mcp.ListToolsParams{Cursor: cursor}})
		if err != nil {
			return nil, nil, err
		}
		lr, ok := res.(*mcp.ListToolsResult)
		if !ok {
			return nil, nil, errors.New("tools/list returned an unexpected result")
		}
		out = append(out, lr.Tools...)
		if lr.NextCursor == "" {
			return out, lr, nil
		}
		cursor = lr.NextCursor
	}
	return nil, nil, errors.New("tools/list did not terminate")
}

// Install guards every tool of s, whether added with mcp.AddTool or
// Server.AddTool, before or after Install, and filters tools/list per
// caller (hidden tools are absent; the result is marked CacheScope
// "private"). It first lists the server's tools and checks each against the
// policy: a tool without a rule, with a ReadOnlyHint that contradicts its
// class (as for [Guard.Wrap]: Annotations without ReadOnlyHint hint a
// write), with a name its audit records could not carry (one
// [policy.CheckName] refuses, which no rule can name, so only a default
// rule would govern it; or over 1024 bytes, even with a rule of its own),
// with a schema that does not compile, or
// whose input schema binds an argument to an HTTP header (an x-mcp-header
// annotation, SEP-2243) while the policy hides the tool from some caller
// is a start-up error, and so is one with a part (its _meta, a schema)
// nested more than 512 levels deep, which its callers' clients could not
// read in a listing. One with bytes that are not UTF-8 once encoded (a
// json.RawMessage in its _meta), which Install's own listing reads as
// U+FFFD, is refused as a bad one added later is (below); one the go-sdk
// cannot encode (a NaN in its _meta) gets no answer to that listing, and
// Install fails after waiting 10 seconds for it, as it does when a receiving
// middleware of the server's holds that listing longer (its session is
// closed once the middleware returns).
// (On protocol 2026-07-28, go-sdk v1.8.0's Streamable HTTP server checks a
// call's Mcp-Param-* headers against the tool it names before any
// middleware runs, and answers a mismatch with its own error, which would
// tell a hidden tool from an unknown one. It does so before the guard
// authenticates the caller too: that such a tool exists is not hidden from
// a caller without credentials.) Tools added or replaced later are checked
// when the guard next lists the server's tools, at the first call a second
// or more after the previous listing (at once after a tools/list_changed
// notification): until then a new name is TOOL_NOT_FOUND and a replaced
// tool is guarded with its previous schema. A bad one is refused at call
// time as TOOL_NOT_FOUND and logged (the go-sdk's header check of a late
// one that binds headers still answers before the guard: add such tools
// before Install). A removed
// tool called in that time is TOOL_NOT_FOUND too, recorded as such and
// charged nothing (a write's intent record, made before the go-sdk was
// asked, is followed by that outcome).
//
// The go-sdk's tools/list_changed notification reaches a session only when
// a tool its caller may see (before or after) was added, replaced or
// removed since the session last listed the tools, or was last notified:
// a change to a hidden tool tells a caller nothing. A new policy
// ([Guard.SetPolicy]) is told so too: the guard sends one to each session
// whose caller may see other tools under it than it was last shown. The caller is the one
// of the session's last authenticated request (a session whose roles
// shrank is told no more than its new roles may see). A session that never
// listed the tools nor listens for their changes (subscriptions/listen),
// or that made a request the guard refused as UNAUTHENTICATED since it
// last did, is told of no change.
//
// The server's prompts and resources (their lists, prompts/get,
// resources/read, subscriptions, whether by resources/subscribe or
// subscriptions/listen, and completions) are served to authenticated
// callers only, as their own: a handler, the SubscribeHandler too, finds
// the caller's [Identity] in its context. A resources/read, prompts/get,
// completion/complete, prompts/list, resources/list or
// resources/templates/list result, or one of a method the server added
// (mcp.AddReceivingCustomMethod), with a part nested more than 512 levels
// deep (a _meta; go-sdk v1.8.0's client closes its session on a message
// nested beyond 1000 levels), that the go-sdk could not encode (it would
// send no answer: a NaN, a resource's NaN priority) or would send as bytes
// that are not UTF-8 (a json.RawMessage in it), whose _meta cannot be read
// (a handler's nil *T: go-sdk v1.8.0 reads it after every middleware, and
// panics) or with a prompt message whose content block is nil or a nil
// pointer, or a part whose MarshalJSON panics (the go-sdk panics encoding
// one), is refused with a JSON-RPC error -32603, as INVALID_RESPONSE is,
// and so is such a handler's error that the go-sdk panics answering with
// (a nil pointer, one whose text panics, or one that wraps a nil
// *jsonrpc.Error or a nil pointer whose Is method reads it), a request
// whose handler panics (a prompt's, a resource's, a completion's, a custom
// method's, the SubscribeHandler on resources/subscribe or
// subscriptions/listen, or a listing's SetCacheable or a middleware below
// the guard: the go-sdk recovers none, and the panic ended the process; it
// is logged with its stack to [Options].Logger, as a tool handler's is;
// one in the listing the guard makes for a notification or a tools/call
// is a listing that failed), a resources/read that panics below the guard
// (go-sdk v1.8.0's own read handler does on a nil content), and a
// tools/list result whose own _meta is such (its tools are checked when
// compiled, above); their size is not capped ([Options].MaxOutputBytes is
// for tool results). The
// policy's roles, limits and audit apply to tools only, but for this: a
// resource that a tool names as its UI resource (MCP Apps, SEP-1865:
// _meta.ui.resourceUri, or the older
// key "ui/resourceUri"; or the OpenAI Apps SDK's "openai/outputTemplate";
// a string, or the strings of an array, under any of them) is served only
// to a caller who may see one of the tools that name it, as the server's
// tools are at the request. To another it is a resource the server does
// not have, and so is every URI that a template's handler might take for
// it, unless that URI is itself one the caller may see: a URI that differs
// from it only by percent-escapes (escaped any number of times), letter
// case (as Unicode folds it: "ſ" for "s"), a query or fragment, its
// host's userinfo, port or trailing dots, or dot segments, backslashes
// for slashes and repeated or trailing slashes in its path (a template
// matches escapes, and uritemplate.Match decodes them). To such a caller,
// resources/list omits it; resources/read is answered with the go-sdk's own
// not-found error for its URI (mcp.ResourceNotFoundError), whether a
// resource or a template serves it, and its handler does not hear of the
// request; a resources/updated notification for it does not reach the
// session. resources/subscribe to it, a subscriptions/listen that names
// it, resources/unsubscribe from it and a completion/complete whose
// ref/resource names it are answered as the server answers them for a URI
// it does not have, whatever its handlers (one that takes any URI, as the
// go-sdk's examples do, too): the guard asks it about the URI with a
// random suffix in its path (before its query or fragment, or an escape
// that decodes to the "?" or "#" of one), which it takes out of the answer
// (an error's message and data, a completion's values) and of what the
// handlers send the client on the request's context (a log message, a
// listen's acknowledgement), and, but for an unsubscribe (below), the
// handlers do not hear of the URI itself. The suffix is the same for the life of the process, so a
// SubscribeHandler that takes any URI subscribes the session to the
// suffixed one, which no update names, and an unsubscribe from the hidden
// one ends it, as for an absent URI; a subscription so made hears of no
// update even once the caller may see the resource (subscribing again
// does). A handler that answers by the URI's length (a limit within 27
// bytes of it, a completion's total) may tell the two apart. (A
// subscription to a server without a SubscribeHandler, which refuses every
// one alike, is passed on.) An unsubscribe is also passed on first as it
// is, its answer, what its handler sends the client and a panic of it
// dropped, so that a subscription made while the caller could see the resource ends.
// resources/list answers in one page, as tools/list (a cursor lists
// nothing): the go-sdk's cursors name the last resource of a page. A
// resources/list_changed notification reaches a session only when the
// resources its caller may see changed since it last listed them, or
// listened for their changes (a tool change that hides or shows a UI
// resource is not announced as one; a new policy that does is, see
// [Guard.SetPolicy]). Telling these notifications apart
// costs one listing of the server's tools (and, for list_changed, of its
// resources) per notification, however many sessions the go-sdk sends it
// to. Resource templates are listed to every authenticated caller: a
// template names a family of URIs, not a tool's resource, and hiding one
// would hide the resources it serves to those who may see them.
// Prompts are not filtered (no tool names a prompt), nor completions but
// for their ref/resource: a CompletionHandler that completes a template's
// argument finds the caller's Identity in its context, and should offer
// no value that names a UI resource the caller may not see. A method the
// server added with mcp.AddReceivingCustomMethod is served so too: to
// authenticated callers only, its handler finding the caller's Identity in
// its context, with no role check or audit record of the guard's (the
// handler decides), whatever its name ("notifications/acme/poke" too).
// Only the go-sdk's initialize, ping, logging/setLevel, server/discover and
// the notifications a client sends (initialized, cancelled, progress,
// roots/list_changed) are passed on unauthenticated.
//
// Install adds receiving and sending middleware to s; call it once, after
// adding the tools and before serving. It lists s's tools through an
// in-memory session of its own, on which s's code runs (a receiving
// middleware added before Install, a SetCacheable, an InitializedHandler):
// there a request's Extra and its TokenInfo may be nil. A panic of that
// code fails Install, saying which request it ended, and is logged with
// its stack. The guard sees tools/call before the
// go-sdk looks the tool up or validates its arguments. A sending middleware
// added after Install (outside the guard's) is to pass on the context it is
// given and return the error of the handler it wraps (it sees a hidden UI
// resource's URI with the guard's suffix, which the guard takes out after
// it, in what the handlers send about it).
// A guard is installed on one server only, as it keeps that server's
// tools: an Install after one that succeeded, on the same server (which
// would run the pipeline twice per call) or on another (whose tools of the same
// names would be held to the first server's schemas), is an error, and
// changes nothing; an Install that failed may be repeated. An Install that
// failed leaves s as it was, unguarded: every tool of it runs for anyone,
// as no caller; a server whose Install failed is not to be served. For several
// servers, make a Guard for each. So a getServer of
// mcp.NewStreamableHTTPHandler (or of the SSE handler) that builds a
// server per session, or per request when stateless, makes a Guard per
// server with [New], from the same Options: guards that share a
// limiter.Limiter, an audit sink and a Confirmer share limits, an audit
// trail and sealed states (with a nil Confirmer, a guard seals a handler's
// request state with a key of its own, which another guard refuses), and
// [Guard.Wait] waits for one guard's calls only. Else getServer returns
// the one server the guard is installed on. Install on a server that the
// guard's [Guard.AddTool] added a tool to is an error too. It cannot tell
// a server that another Guard is installed on, or whose handlers
// [Guard.Wrap] wrapped: each would run its pipeline.
func (g *Guard) Install(s *mcp.Server) error {
	if err := g.unmade(); err != nil {
		return err
	}
	if s == nil {
		return errors.New("mcpguard: nil server")
	}
	g.instMu.Lock()
	defer g.instMu.Unlock()
	switch {
	case g.server == s:
		return errors.New("mcpguard: the guard is already installed on this server: a second Install would run its pipeline twice per call")
	case g.server != nil:
		return errors.New("mcpguard: the guard is already installed on another server: a guard keeps the tools of one server; make a Guard per server")
	}
	if _, ok := g.added[weak.Make(s)]; ok {
		return errors.New("mcpguard: the guard's AddTool added a tool to this server: Install would run that tool's pipeline twice per call; add its tools with the server's AddTool")
	}
	catchListings(s)
	li := &toolListing{}
	tools, caps, err := serverTools(s, li)
	if p := li.panic.Load(); p != nil {
		g.log.Error("mcpguard: the server panicked while Install listed its tools", "method", p.method, "panic", p.text, "stack", p.stack)
	}
	if err != nil {
		return fmt.Errorf("mcpguard: listing the server's tools: %w", err)
	}
	// Checked and installed under one policy: a SetPolicy waits.
	g.polMu.Lock()
	defer g.polMu.Unlock()
	for _, t := range tools {
		if _, err := g.compile(t); err != nil {
			return err
		}
	}
	g.update(tools)
	g.res.learnCaps(caps)
	// below is the server's own handling of what the guard receives; the
	// guard lists the tools through it when they change (notify.go).
	var below, send mcp.MethodHandler
	op := &openers{}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		below = next
		return g.receiving(next, op)
	})
	s.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		below := g.recovering(below)
		send = next
		return g.sendingResources(g.sending(g.watchListens(next), below), below)
	})
	// A server whose capabilities turn tools/list_changed off is sent
	// none for a new policy either (the go-sdk adds a tools capability
	// of its own only with listChanged).
	quiet := caps != nil && caps.Tools != nil && !caps.Tools.ListChanged
	g.lc.target.Store(&notifyTarget{server: s, send: send, quiet: quiet})
	g.server = s
	return nil
}

// recovering returns below, through which the guard lists the server's
// tools and resources for a notification (notify.go, resnotify.go) or
// for a tools/call whose registry is due, with a panic below it (a
// SetCacheable of the server's, a middleware below the guard) a listing
// that failed, see panicked: the go-sdk recovers none, and the panic ended
// the process, from the goroutine sending the notification.
func (g *Guard) recovering(below mcp.MethodHandler) mcp.MethodHandler {
	if below == nil {
		return nil
	}
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if r := recover(); r != nil {
				res, err = nil, g.panicked(ctx, method, r)
			}
		}()
		return below(ctx, method, req)
	}
}

// installWait bounds serverTools' listing: in memory it takes
// microseconds, but go-sdk v1.8.0 drops an answer it cannot encode (a tool
// with a NaN in its _meta) and logs the failure to the server's logger
// only, and the listing would wait for ever.
var installWait = 10 * time.Second

// A toolListing is one listing of a server's tools by Install (see
// [serverTools]): the context of its throwaway session holds it, under
// listingKey, and catchListing records there the first panic of the
// server's own code on that session.
type toolListing struct {
	panic atomic.Pointer[listPanic]
}

type listingKey struct{}

// listPanic is a panic catchListing recovered: its text, the method of the
// request it ended and its stack.
type listPanic struct{ text, method, stack string }

// catchListing is the receiving middleware that recovers a panic of the
// server's own code (a receiving middleware added before Install, a
// SetCacheable, an InitializedHandler) on a session through which Install
// lists its tools: the go-sdk recovers none, and such a panic ended the
// process from one of its goroutines, with a stack that names neither
// Install nor the guard. Code that holds for every session a transport
// makes (a request's Extra, or its TokenInfo, not nil) may not hold for an
// in-memory one. Every other request it passes on: it is a layer below
// where the guard's go once it is installed, which stays.
func catchListing(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		li, _ := ctx.Value(listingKey{}).(*toolListing)
		if li == nil {
			return next(ctx, method, req)
		}
		defer func() {
			if r := recover(); r != nil {
				li.panic.CompareAndSwap(nil, &listPanic{panicText(r), method, string(debug.Stack())})
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server panicked"}
			}
		}()
		return next(ctx, method, req)
	}
}

// catchListings adds catchListing to s, unless an Install (of any guard:
// one whose Install failed, a program's start retried with a new Guard)
// added it to s already: it acts only on an Install's own listing, so one
// layer serves every guard, and a failed Install leaves no layer more.
func catchListings(s *mcp.Server) {
	catching.mu.Lock()
	defer catching.mu.Unlock()
	k := weak.Make(s)
	if _, ok := catching.servers[k]; ok {
		return
	}
	s.AddReceivingMiddleware(catchListing)
	if catching.servers == nil {
		catching.servers = map[weak.Pointer[mcp.Server]]struct{}{}
	}
	catching.servers[k] = struct{}{}
	runtime.AddCleanup(s, func(k weak.Pointer[mcp.Server]) {
		catching.mu.Lock()
		defer catching.mu.Unlock()
		delete(catching.servers, k)
	}, k)
}

// catching holds the servers catchListings added catchListing to.
var catching struct {
	mu      sync.Mutex
	servers map[weak.Pointer[mcp.Server]]struct{}
}

// serverTools lists s's tools through a throwaway in-memory session, and
// returns s's capabilities as told to it; li records a panic of s's code
// on that session (see catchListing). It waits installWait at most:
// closing that session waits for its handlers, and a receiving middleware
// that ignores its context's end would hold it; that session is closed
// once it returns.
func serverTools(s *mcp.Server, li *toolListing) ([]*mcp.Tool, *mcp.ServerCapabilities, error) {
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), listingKey{}, li), installWait)
	type listed struct {
		tools []*mcp.Tool
		caps  *mcp.ServerCapabilities
		err   error
	}
	done := make(chan listed, 1)
	go func() {
		defer cancel()
		tools, caps, err := listServerTools(ctx, s)
		done <- listed{tools, caps, err}
	}()
	var l listed
	select {
	case l = <-done:
	case <-ctx.Done():
		select {
		case l = <-done:
		default:
			l.err = ctx.Err()
		}
	}
	if p := li.panic.Load(); p != nil {
		return nil, nil, fmt.Errorf("the server's own code panicked on %s (a receiving middleware added before Install, a SetCacheable, an InitializedHandler; in Install's in-memory session a request's Extra and its TokenInfo may be nil): %s", p.method, p.text)
	}
	if l.err != nil && ctx.Err() != nil {
		return nil, nil, fmt.Errorf("the server did not answer its tools listing within %v (a tool the go-sdk cannot encode, such as one with a NaN in its _meta, gets no answer): %w", installWait, l.err)
	}
	return l.tools, l.caps, l.err
}

func listServerTools(ctx context.Context, s *mcp.Server) ([]*mcp.Tool, *mcp.ServerCapabilities, error) {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		return nil, nil, err
	}
	defer ss.Close()
	cl := mcp.NewClient(&mcp.Implementation{Name: "mcpguard-install", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, ct, nil)
	if err != nil {
		return nil, nil, err
	}
	defer cs.Close()
	var out []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, err
		}
		out = append(out, t)
	}
	var caps *mcp.ServerCapabilities
	if ir := cs.InitializeResult(); ir != nil {
		caps = ir.Capabilities
	}
	return out, caps, nil
}

// receiving is the guard's middleware for the requests a server receives.
// A request other than a housekeeping one that panics below the guard (a
// handler of the server's, its SetCacheable on a listing, a middleware
// below the guard, or the go-sdk itself) is refused, see panicked: the
// go-sdk recovers none, and the panic ended the process. A tool handler's
// panic is a tool's failure, see serve. It records in op who opened each
// session over HTTP, from its initialize, and hands op to the pipeline of
// each call over HTTP (see bound).
func (g *Guard) receiving(next mcp.MethodHandler, op *openers) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		if !housekeeping(method) {
			defer func() {
				if r := recover(); r != nil {
					res, err = nil, g.panicked(ctx, method, r)
				}
			}()
		}
		switch r := req.(type) {
		case *mcp.CallToolRequest:
			name := ""
			if r.Params != nil {
				name = r.Params.Name
			}
			e, refresh, gen := g.reg.lookup(name, time.Now())
			// Stale or due: re-list from the server itself. If that fails,
			// a stale registry answers TOOL_NOT_FOUND and a due one keeps
			// its entries (a listing that panics fails, see recovering).
			// A listing overtaken by a tools/list_changed notification is
			// not installed, and is made again (a few times at most: the
			// tools are changing under it).
			for try := 0; refresh && try < 3; try++ {
				tools, err := listAll(ctx, g.recovering(next), r.Session)
				if err != nil {
					break
				}
				if g.updateSince(tools, gen) {
					e, _ = g.reg.get(name)
					break
				}
				e, gen = nil, g.reg.generation()
			}
			if r.Extra != nil && r.Extra.Header != nil {
				ctx = context.WithValue(ctx, openersKey{}, op)
			}
			res, err := g.serve(ctx, r, e, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				out, err := next(ctx, method, req)
				if err != nil {
					if gone(err, req) {
						// Removed since the registry last listed the tools.
						g.reg.invalidate()
						return nil, errToolGone
					}
					return nil, err
				}
				ctr, ok := out.(*mcp.CallToolResult)
				if !ok {
					return nil, errors.New("tools/call returned an unexpected result")
				}
				return ctr, nil
			})
			if err != nil {
				return nil, err
			}
			return res, nil
		case *mcp.ListToolsRequest:
			return g.listTools(ctx, r, next)
		case *mcp.SubscriptionsListenRequest:
			return g.listen(ctx, r, g.listenResources(g.endingListen(next)))
		case *mcp.ListResourcesRequest:
			return g.listResources(ctx, r, next)
		case *mcp.ReadResourceRequest:
			return g.readResource(ctx, r, next)
		case *mcp.SubscribeRequest:
			return g.subscribeResource(ctx, r, next)
		case *mcp.UnsubscribeRequest:
			return g.unsubscribeResource(ctx, r, next)
		case *mcp.CompleteRequest:
			return g.completeResource(ctx, r, next)
		case *mcp.ListPromptsRequest, *mcp.GetPromptRequest, *mcp.ListResourceTemplatesRequest:
			return g.asCaller(ctx, method, req, next)
		}
		if !housekeeping(method) {
			// A method the server added (mcp.AddReceivingCustomMethod).
			return g.asCaller(ctx, method, req, next)
		}
		res, err = next(ctx, method, req)
		g.res.learn(res) // initialize and server/discover tell whether the server takes subscriptions
		if ir, ok := req.(*mcp.ServerRequest[*mcp.InitializeParams]); ok && err == nil {
			op.opened(ir)
		}
		return res, err
	}
}

// housekeeping reports whether method is one of the go-sdk's own that a
// session makes whoever its caller: initialize, ping, logging/setLevel,
// server/discover and the notifications a client sends (go-sdk v1.8.0's
// serverMethodInfos). The guard passes these on as they come; every other
// method that reaches it is the server's own (mcp.AddReceivingCustomMethod,
// which takes any other name, "notifications/acme/poke" too, for a
// request), or a standard one the guard handles.
func housekeeping(method string) bool {
	switch method {
	case "initialize", "ping", "logging/setLevel", "server/discover",
		"notifications/initialized", "notifications/cancelled",
		"notifications/progress", "notifications/roots/list_changed":
		return true
	}
	return false
}

// errToolGone says that the server no longer has the tool the registry
// found: the call is TOOL_NOT_FOUND, and charged nothing.
var errToolGone = errors.New("mcpguard: the tool was removed from the server")

// gone reports whether err is the go-sdk's answer for a tool it does not
// have: the one called.
func gone(err error, req *mcp.CallToolRequest) bool {
	we := wireError(err)
	if we == nil || req.Params == nil {
		return false
	}
	nf := notFoundWire(req.Params.Name, 0)
	return we.Code == nf.Code && we.Message == nf.Message && len(we.Data) == 0
}

// asCaller runs a request for the server's prompts or resources, or for a
// method it added (mcp.AddReceivingCustomMethod), as its authenticated
// caller: a caller the guard cannot authenticate is refused,
// as at tools/list, and the handler finds the caller's [Identity] in its
// context.
func (g *Guard) asCaller(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	id, werr := g.authenticateList(ctx, req, method)
	if werr != nil {
		return nil, werr
	}
	return g.runAs(ctx, id, method, req, next)
}

// runAs runs an authenticated request with id in its context. A
// resource's contents may be the caller's own, so a read's result is
// marked CacheScope "private", and so are a prompts/list and a
// resources/templates/list result: served to authenticated callers only,
// neither is for a cache to hand across callers ("public"). A result that
// the caller's client could not read is refused (see unsendable), and so
// is an error the go-sdk could not answer with (see answerable); a handler
// that panics is refused by receiving.
func (g *Guard) runAs(ctx context.Context, id *Identity, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	res, err := next(NewContext(ctx, id), method, req)
	if err != nil && !answerable(err) {
		return nil, g.malformed(method, errors.New("the go-sdk cannot answer with the error (it is, or wraps, a nil pointer)"))
	}
	if err == nil {
		if werr := g.unsendable(method, res); werr != nil {
			return nil, werr
		}
	}
	if err != nil {
		return res, err
	}
	switch r := res.(type) {
	case *mcp.ReadResourceResult:
		if r != nil {
			out := *r
			out.CacheScope = "private"
			return &out, nil
		}
	case *mcp.ListPromptsResult:
		if r != nil {
			out := *r
			out.CacheScope = "private"
			return &out, nil
		}
	case *mcp.ListResourceTemplatesResult:
		if r != nil {
			out := *r
			out.CacheScope = "private"
			return &out, nil
		}
	}
	return res, err
}

// answerable reports whether go-sdk v1.8.0 can answer a request with err,
// a handler's error, which it reads after every middleware: it panics, ending
// the process, on an error that is a nil pointer (a handler's nil *T: it asks
// its text, and errors.Is of it) or wraps a nil *jsonrpc.Error (whose code it
// reads), and so on one whose Error panics, or an Is method in whose tree
// does: its jsonrpc2 asks errors.Is(err, ErrNotHandled), an errors.New
// value, and errors.Is(err, ErrMethodNotFound), a *jsonrpc.Error, which call
// the Is method of every error err wraps (a nil *jsonrpc.Error's, after a
// *jsonrpc.Error that is not nil, or a nil *T's that reads its receiver),
// until one says yes.
func answerable(err error) (ok bool) {
	if nilPointer(err) {
		return false
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_ = err.Error()
	var we *jsonrpc.Error
	if errors.As(err, &we) && we == nil {
		return false
	}
	// As the go-sdk asks, with targets of the same types.
	_ = errors.Is(err, errToolGone)
	_ = errors.Is(err, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound})
	return true
}

// authenticateList authenticates a request other than tools/call, which
// is refused with a JSON-RPC error (there is no tool result to carry it).
func (g *Guard) authenticateList(ctx context.Context, req mcp.Request, method string) (*Identity, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	id, err := g.authn.Authenticate(ctx, req)
	if err != nil || noIdentity(id) {
		d := authDenial(err)           // as a tools/call's: a cap or a provider down is not "sign in again"
		d.CorrelationID = g.ids.Next() // as every refusal of the guard has one
		if detail := authDetail(err); detail != "" {
			g.log.Warn("mcpguard: request refused", "method", method, "code", d.Code, "correlation_id", d.CorrelationID, "detail", detail)
		} else {
			g.log.Warn("mcpguard: request refused", "method", method, "code", d.Code, "correlation_id", d.CorrelationID)
		}
		if d.Code == CodeUnauthenticated {
			g.dropViews(ss)
		}
		return nil, d.JSONRPCError(0)
	}
	g.noteUnbound(req)
	g.touchViews(ss, id.Principal)
	return id, nil
}

// listTools answers tools/list with what the caller may see, in one page:
// it lists every tool below the guard, which also refreshes the registry,
// and gives no cursor (the go-sdk's cursors name the last tool of a page,
// which may be one the caller must not learn of). A cursor, which the
// guard never gives, lists nothing. A tool refused at registration is not
// listed, whether the registry knows it yet or not. The listing becomes
// the session's view (notify.go), against which a change is told.
func (g *Guard) listTools(ctx context.Context, req *mcp.ListToolsRequest, next mcp.MethodHandler) (mcp.Result, error) {
	id, err := g.authenticateList(ctx, req, "tools/list")
	if err != nil {
		return nil, err
	}
	seq := g.views.seen(req.Session, id.Principal)
	gen := g.reg.generation()
	tools, last, err := listPages(ctx, next, req.Session)
	if err != nil {
		return nil, err
	}
	g.updateSince(tools, gen)
	pol, _, _, _ := g.showTools(req.Session, seq, tools)
	out := *last
	out.NextCursor, out.CacheScope = "", "private"
	out.Tools = []*mcp.Tool{}
	if err := sendableMeta(out.Meta); err != nil {
		return nil, g.malformed("tools/list", err)
	}
	if req.Params != nil && req.Params.Cursor != "" {
		return &out, nil
	}
	out.Tools = g.visibleTools(pol, id.Principal, tools)
	return &out, nil
}

// refused reports whether t is a tool the guard refuses under the policy
// p (every call to it answers TOOL_NOT_FOUND): from its registry entry for
// t, or, where the registry holds none (a listing overtaken by a change),
// by compiling it.
func (g *Guard) refused(p *policy.Policy, t *mcp.Tool) bool {
	g.reg.mu.RLock()
	e := g.reg.byName[t.Name]
	g.reg.mu.RUnlock()
	if e != nil && (e.tool == t || sameTool(e.tool, t)) {
		return e.check(p) != nil
	}
	_, err := g.compileUnder(p, t)
	return err != nil
}
