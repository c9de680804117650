package mcpguard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/jsondepth"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP Apps tool (the MCP Apps extension, SEP-1865) names its UI
// resource, a ui:// URI, in its _meta: as _meta.ui.resourceUri, or under
// the older flat key "ui/resourceUri"; a tool written for the OpenAI Apps
// SDK names it (its widget) under "openai/outputTemplate", which hosts
// still honour as an alias. Served to any caller, the UI resource of a
// tool hidden from a caller would reveal the tool (and may carry its UI).
// So a resource that one or more of the server's tools name is the
// caller's only if the caller may see one of them, as tools/list shows
// them; to any other caller it looks like a resource the server does not
// have. The go-sdk v1.8.0 knows nothing of MCP Apps: the guard reads the
// three keys itself, from the server's tools as they are at the request.
// (uiuri.go: which URIs mean a UI resource.)

// uiResources returns the URIs of the UI resources t names in its _meta.
// The server's own *mcp.Tool is read, whose _meta values may be any Go
// value: they are read as the JSON a client would be sent. A value names
// the URIs it holds, whatever its shape (so a URI named in a shape that
// hosts would not read is hidden all the same): a string, the strings of
// an array, and for "ui", the resourceUri of an object, read alike.
func uiResources(t *mcp.Tool) []string {
	if t == nil || len(t.Meta) == 0 {
		return nil
	}
	var out []string
	add := func(raw json.RawMessage) {
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil {
			arr = []json.RawMessage{raw}
		}
		for _, v := range arr {
			var s string
			if json.Unmarshal(v, &s) == nil && s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	for _, k := range []string{"ui/resourceUri", "openai/outputTemplate", "ui"} {
		v, ok := t.Meta[k]
		if !ok {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			continue
		}
		var ui map[string]json.RawMessage
		if k == "ui" && json.Unmarshal(raw, &ui) == nil {
			raw = ui["resourceUri"]
		}
		if raw != nil {
			add(raw)
		}
	}
	return out
}

// uiLinks lists the server's tools (through next, below the guard) and
// returns the guard's entries of those that name a UI resource: whose
// rule and refusal decide who may see them. The tools are listed at every
// request, so that a tool added a moment ago hides its resource at once.
func (g *Guard) uiLinks(ctx context.Context, next mcp.MethodHandler, ss *mcp.ServerSession) ([]*toolEntry, error) {
	gen := g.reg.generation()
	tools, err := listAll(ctx, next, ss)
	if err != nil {
		return nil, err
	}
	links, missed := g.linked(tools)
	if len(missed) > 0 && g.updateSince(tools, gen) {
		links, missed = g.linked(tools)
	}
	// Overtaken by a change: judge the tools the registry lacks here.
	for _, t := range missed {
		if ui := uiResources(t); len(ui) > 0 {
			e := g.build(t)
			e.ui = ui
			links = append(links, e)
		}
	}
	return links, nil
}

// linked returns the registry's entries of those of tools that name a UI
// resource, and the tools it has no entry for.
func (g *Guard) linked(tools []*mcp.Tool) (links []*toolEntry, missed []*mcp.Tool) {
	g.reg.mu.RLock()
	defer g.reg.mu.RUnlock()
	for _, t := range tools {
		e := g.reg.byName[t.Name]
		if e == nil || (e.tool != t && !sameTool(e.tool, t)) {
			missed = append(missed, t)
			continue
		}
		if len(e.ui) > 0 {
			links = append(links, e)
		}
	}
	return links, missed
}

// hides reports whether uri is, or means, a UI resource that pr may not
// see, as the server's tools are now.
func (g *Guard) hides(ctx context.Context, next mcp.MethodHandler, ss *mcp.ServerSession, pr *policy.Principal, uri string) (bool, error) {
	links, err := g.uiLinks(ctx, next, ss)
	if err != nil {
		return false, err
	}
	return g.sight(pr, links).hides(uri), nil
}

// visibleResources returns the resources of all that the caller of sight
// may see.
func visibleResources(sight *uiSight, all []*mcp.Resource) []*mcp.Resource {
	out := []*mcp.Resource{}
	for _, r := range all {
		if r != nil && !sight.hides(r.URI) {
			out = append(out, r)
		}
	}
	return out
}

// digest sums a listing of resources, to tell whether it changed.
func digest(rs []*mcp.Resource) [32]byte {
	d, _ := listing(rs)
	return d
}

// listing is digest that also fails, as sendable does, on resources the
// go-sdk could not send (a _meta, or a NaN priority): it reads the one
// encoding of them.
func listing(rs []*mcp.Resource) ([32]byte, error) {
	raw, err := marshal(rs)
	if err != nil {
		return [32]byte{}, errors.New("the result does not marshal")
	}
	return sha256.Sum256(raw), sendableJSON("the result", raw)
}

// listResourcePages pages through resources/list below the guard and
// returns the resources and the last page's result, whose other fields an
// answer of the guard's keeps.
func listResourcePages(ctx context.Context, next mcp.MethodHandler, ss *mcp.ServerSession) ([]*mcp.Resource, *mcp.ListResourcesResult, error) {
	var out []*mcp.Resource
	cursor := ""
	for range 1000 {
		res, err := next(ctx, "resources/list", &mcp.ListResourcesRequest{Session: ss, Params: &mcp.ListResourcesParams{Cursor: cursor}})
		if err != nil {
			return nil, nil, err
		}
		lr, ok := res.(*mcp.ListResourcesResult)
		if !ok || lr == nil {
			return nil, nil, errors.New("resources/list returned an unexpected result")
		}
		out = append(out, lr.Resources...)
		if lr.NextCursor == "" {
			return out, lr, nil
		}
		cursor = lr.NextCursor
	}
	return nil, nil, errors.New("resources/list did not terminate")
}

// listResources answers resources/list with the resources the caller may
// see, in one page, as listTools answers tools/list: the go-sdk's cursors
// name the last resource of a page, which may be a hidden one, and a page
// shortened by the hidden ones would tell of them by its size. A cursor,
// which the guard never gives, lists nothing. The listing becomes the
// session's view, against which a change is told (of the server's
// resources, or by a new policy: see dueResourceNotices).
func (g *Guard) listResources(ctx context.Context, req *mcp.ListResourcesRequest, next mcp.MethodHandler) (mcp.Result, error) {
	id, err := g.authenticateList(ctx, req, "resources/list")
	if err != nil {
		return nil, err
	}
	seq := g.res.seen(req.Session, id.Principal)
	links, err := g.uiLinks(ctx, next, req.Session)
	if err != nil {
		return nil, err
	}
	all, last, err := listResourcePages(NewContext(ctx, id), next, req.Session)
	if err != nil {
		return nil, err
	}
	pol := g.pol.Load()
	shown := visibleResources(g.sightBy(pol, id.Principal, links), all)
	sum, unsent := listing(shown)
	g.res.show(req.Session, seq, resView{sum, pol})
	g.shownUnder(pol)
	out := *last
	out.NextCursor, out.CacheScope = "", "private"
	out.Resources = []*mcp.Resource{}
	if err := sendableMeta(out.Meta); err != nil {
		return nil, g.malformed("resources/list", err)
	}
	if req.Params != nil && req.Params.Cursor != "" {
		return &out, nil
	}
	if unsent != nil {
		return nil, g.malformed("resources/list", unsent)
	}
	out.Resources = shown
	return &out, nil
}

// readResource answers resources/read of a UI resource the caller may not
// see with the go-sdk's own error for a resource it does not have. A read
// that panics below the guard is refused as a malformed result (see
// receiving): go-sdk v1.8.0's own read handler panics on a handler's
// result with a nil content (it fills in each content's URI), before the
// guard can see the result; the panic ended the process. (A resource
// handler's own panic is refused so too; the log shows its stack, see
// panicked.)
func (g *Guard) readResource(ctx context.Context, req *mcp.ReadResourceRequest, next mcp.MethodHandler) (mcp.Result, error) {
	id, err := g.authenticateList(ctx, req, "resources/read")
	if err != nil {
		return nil, err
	}
	if req.Params != nil {
		hide, err := g.hides(ctx, next, req.Session, id.Principal, req.Params.URI)
		if err != nil {
			return nil, err
		}
		if hide {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
	}
	return g.runAs(ctx, id, "resources/read", req, next)
}

// subscribeResource answers resources/subscribe to a UI resource the
// caller may not see as the server answers one to a URI it does not have
// (see asAbsent): a SubscribeHandler that takes any URI subscribes the
// session to that URI, which no update names, and an unsubscribe from the
// hidden one ends it, as on a server without the resource. A server
// without a SubscribeHandler refuses every subscription alike, and is left
// to.
func (g *Guard) subscribeResource(ctx context.Context, req *mcp.SubscribeRequest, next mcp.MethodHandler) (mcp.Result, error) {
	id, err := g.authenticateList(ctx, req, "resources/subscribe")
	if err != nil {
		return nil, err
	}
	g.res.seen(req.Session, id.Principal)
	if req.Params != nil && g.res.subscribes() {
		hide, err := g.hides(ctx, next, req.Session, id.Principal, req.Params.URI)
		if err != nil {
			return nil, err
		}
		if hide {
			return g.asAbsent(ctx, func(ctx context.Context) (mcp.Result, error) {
				q, p := *req, *req.Params
				p.URI, q.Params = withSuffix(p.URI), &p
				return g.runAs(ctx, id, "resources/subscribe", &q, next)
			})
		}
	}
	return g.runAs(ctx, id, "resources/subscribe", req, next)
}

// unsubscribeResource answers resources/unsubscribe from a UI resource the
// caller may not see as the server answers one from a URI it does not have
// (see asAbsent). It is passed on first, its answer dropped, so that a
// subscription made while the caller could see the resource (its roles
// since shrank) ends: what its handler sends the client on the way (a log
// message) is not sent, and a panic of it is logged only (see askingKey).
func (g *Guard) unsubscribeResource(ctx context.Context, req *mcp.UnsubscribeRequest, next mcp.MethodHandler) (mcp.Result, error) {
	id, err := g.authenticateList(ctx, req, "resources/unsubscribe")
	if err != nil {
		return nil, err
	}
	if req.Params != nil {
		hide, err := g.hides(ctx, next, req.Session, id.Principal, req.Params.URI)
		if err != nil {
			return nil, err
		}
		if hide {
			quiet := context.WithValue(ctx, askingKey{}, askQuiet)
			_, _ = g.runAs(quiet, id, "resources/unsubscribe", req, g.recovering(next))
			return g.asAbsent(ctx, func(ctx context.Context) (mcp.Result, error) {
				q, p := *req, *req.Params
				p.URI, q.Params = withSuffix(p.URI), &p
				return g.runAs(ctx, id, "resources/unsubscribe", &q, next)
			})
		}
	}
	return g.runAs(ctx, id, "resources/unsubscribe", req, next)
}

// completeResource answers completion/complete for a ref/resource that
// is, or means, a UI resource the caller may not see as the server answers
// one for a URI it does not have (see asAbsent): the CompletionHandler
// does not hear of the URI.
func (g *Guard) completeResource(ctx context.Context, req *mcp.CompleteRequest, next mcp.MethodHandler) (mcp.Result, error) {
	id, err := g.authenticateList(ctx, req, "completion/complete")
	if err != nil {
		return nil, err
	}
	if p := req.Params; p != nil && p.Ref != nil && p.Ref.Type == "ref/resource" {
		hide, err := g.hides(ctx, next, req.Session, id.Principal, p.Ref.URI)
		if err != nil {
			return nil, err
		}
		if hide {
			return g.asAbsent(ctx, func(ctx context.Context) (mcp.Result, error) {
				q, p, ref := *req, *req.Params, *req.Params.Ref
				ref.URI, p.Ref, q.Params = withSuffix(ref.URI), &ref, &p
				return g.runAs(ctx, id, "completion/complete", &q, next)
			})
		}
	}
	return g.runAs(ctx, id, "completion/complete", req, next)
}

// asAbsent answers a request about a UI resource the caller may not see
// as the server answers it about a URI it does not have: ask asks it
// (below the guard, the go-sdk's checks and the server's handler) about
// the resource's URI with absentSuffix in its path (withSuffix), which no
// resource has, and its answer is given with that suffix taken out of its
// error's message and data, and out of a completion's values; so is every
// message its handler sends the client with ask's context (a log message,
// a listen's acknowledgement: see askingKey). So the answer is the one for
// an absent URI whether the handler refuses a URI it lacks
// (mcp.ResourceNotFoundError, as the go-sdk advises a resource's handler
// to) or takes any URI (as the go-sdk's example SubscribeHandler,
// UnsubscribeHandler and CompletionHandler do); a handler that answers by
// what the URI looks like (its scheme, a template that matches it) is
// asked about one that looks the same, and one that keeps what it is asked
// (a subscription, to end at an unsubscribe) is asked about the same URI
// each time. A handler that answers by the URI's length (a limit, a
// completion's total) may answer otherwise: the suffix is 27 bytes. A
// handler's panic is answered as at any URI (see panicked).
func (g *Guard) asAbsent(ctx context.Context, ask func(ctx context.Context) (mcp.Result, error)) (mcp.Result, error) {
	res, err := ask(context.WithValue(ctx, askingKey{}, askAbsent))
	if err != nil {
		if je, ok := err.(*jsonrpc.Error); ok && je != nil {
			out := *je
			out.Message = stripSuffix(je.Message)
			if je.Data != nil {
				out.Data = json.RawMessage(stripSuffix(string(je.Data)))
			}
			return nil, &out
		}
		return nil, &strippedError{msg: stripSuffix(err.Error()), err: err}
	}
	if cr, ok := res.(*mcp.CompleteResult); ok && cr != nil {
		out := *cr
		out.Completion.Values = slices.Clone(cr.Completion.Values)
		for i, v := range out.Completion.Values {
			out.Completion.Values[i] = stripSuffix(v)
		}
		return &out, nil
	}
	return res, nil
}

// absentSuffix, added to a hidden UI resource's URI, makes the URI of
// a resource the server does not have (see asAbsent). It is random, and
// the same for the life of the process: a handler that keeps what it is
// asked is asked the same URI each time, as it would be about an absent
// one. Of base32 letters and a hyphen, it reads the same percent-encoded
// or JSON-escaped.
var absentSuffix = "-" + strings.ToLower(rand.Text())

// withSuffix returns uri with absentSuffix added to its path, before its
// query or fragment: a handler that ignores those (as one that reads a URI
// leniently does) would ignore a suffix there too, and answer about the
// hidden resource itself. That is before a percent-escape that decodes to
// the "?" or "#" (as "%3F" and "%253F" do), as uriKey reads the URI: a
// handler that decodes it would find the query there (see queryAt).
func withSuffix(uri string) string {
	i := queryAt(uri)
	return uri[:i] + absentSuffix + uri[i:]
}

// queryAt returns the index in uri of its query or fragment, as uriKey
// finds them once the URI's percent-escapes are decoded until none are left
// (unescapeAll): of the first "?" or "#", or of the first byte of the
// escapes that decode to one; len(uri) if it has neither.
func queryAt(uri string) int {
	type decoded struct {
		c    byte
		from int // the index in uri of the first byte it is decoded from
	}
	// As in unescapeAll: b never holds an escape; "?" and "#" are never part
	// of one, so the first of them in b is the one a handler finds.
	b := make([]decoded, 0, len(uri))
	for i := 0; i < len(uri); i++ {
		b = append(b, decoded{uri[i], i})
		for n := len(b); n >= 3 && b[n-3].c == '%'; n = len(b) {
			hi, ok1 := unhex(b[n-2].c)
			lo, ok2 := unhex(b[n-1].c)
			if !ok1 || !ok2 {
				break
			}
			b = append(b[:n-3], decoded{hi<<4 | lo, b[n-3].from})
		}
		if last := b[len(b)-1]; last.c == '?' || last.c == '#' {
			return last.from
		}
	}
	return len(uri)
}

// stripSuffix takes absentSuffix out of s.
func stripSuffix(s string) string { return strings.ReplaceAll(s, absentSuffix, "") }

// An askingKey's value in a request's context says how the guard asks that
// request below it, for what the handler sends the client with that
// context (see [Guard.sendingResources]).
type askingKey struct{}

type asking int

const (
	// askAbsent: about a hidden UI resource's URI with absentSuffix
	// (asAbsent): the suffix is taken out of each message sent.
	askAbsent asking = iota + 1
	// askQuiet: a request whose answer the caller is not given (an
	// unsubscribe from a hidden UI resource): nothing is sent.
	askQuiet
)

// withoutSuffix returns req, a message sent to the client, with
// absentSuffix taken out of its params (of the go-sdk's types, whose
// encoding they are read back from), and false if that cannot be done.
func withoutSuffix(req mcp.Request) (mcp.Request, bool) {
	rv := reflect.ValueOf(req)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return req, false
	}
	f := rv.Elem().FieldByName("Params")
	if !f.IsValid() || (f.Kind() != reflect.Pointer && f.Kind() != reflect.Interface) {
		return req, false
	}
	raw, err := marshal(f.Interface())
	if err != nil {
		return req, false
	}
	if !strings.Contains(string(raw), absentSuffix) {
		return req, true
	}
	pv := f
	if pv.Kind() == reflect.Interface { // the go-sdk's ServerRequest[Params]
		pv = pv.Elem()
	}
	if pv.Kind() != reflect.Pointer || pv.IsNil() {
		return req, false
	}
	p := reflect.New(pv.Type().Elem())
	// Numbers in untyped data (a log message's) as written: as float64s,
	// one above 2^53 would change and one beyond its range fail.
	d := json.NewDecoder(strings.NewReader(stripSuffix(string(raw))))
	d.UseNumber()
	if d.Decode(p.Interface()) != nil {
		return req, false
	}
	out := reflect.New(rv.Elem().Type())
	out.Elem().Set(rv.Elem())
	out.Elem().FieldByName("Params").Set(p)
	r, ok := out.Interface().(mcp.Request)
	return r, ok
}

// A strippedError is a handler's error, err, whose message is msg: the
// go-sdk answers with msg and the code of the *jsonrpc.Error err wraps.
type strippedError struct {
	msg string
	err error
}

func (e *strippedError) Error() string { return e.msg }
func (e *strippedError) Unwrap() error { return e.err }

// listenResources wraps the handler that [Guard.listen] passes an
// authenticated subscriptions/listen to (the caller's Identity is in its
// context): a listen that names UI resources its caller may not see is
// passed on naming them with absentSuffix (withSuffix), as asAbsent asks,
// so that the go-sdk and the SubscribeHandler answer it as they answer one
// naming URIs the server does not have: refused at the first one the
// handler refuses, else acknowledged with the URIs as named and held open
// (its subscription to a hidden one hears of no update, as to an absent
// resource, even once its caller may see the resource). A listen for
// resources/list_changed gives its session a view, against which a change
// is told.
func (g *Guard) listenResources(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.SubscriptionsListenRequest)
		id := FromContext(ctx)
		if !ok || method != "subscriptions/listen" || id == nil || r.Params == nil || r.Params.Notifications == nil {
			return next(ctx, method, req)
		}
		n := r.Params.Notifications
		seq := g.res.seen(r.Session, id.Principal)
		subs := len(n.ResourceSubscriptions) > 0 && g.res.subscribes()
		if subs || n.ResourcesListChanged {
			links, err := g.uiLinks(ctx, next, r.Session)
			if err != nil {
				return nil, err
			}
			sight := g.sight(id.Principal, links)
			if n.ResourcesListChanged {
				if all, _, err := listResourcePages(ctx, next, r.Session); err == nil {
					pol := g.pol.Load()
					shown := visibleResources(g.sightBy(pol, id.Principal, links), all)
					g.res.show(r.Session, seq, resView{digest(shown), pol})
					g.shownUnder(pol)
				}
			}
			if subs && slices.ContainsFunc(n.ResourceSubscriptions, sight.hides) {
				uris := slices.Clone(n.ResourceSubscriptions)
				for i, u := range uris {
					if sight.hides(u) {
						uris[i] = withSuffix(u)
					}
				}
				notes := *n
				notes.ResourceSubscriptions = uris
				params := *r.Params
				params.Notifications = &notes
				q := *r
				q.Params = &params
				return g.asAbsent(ctx, func(ctx context.Context) (mcp.Result, error) {
					return next(ctx, method, &q)
				})
			}
		}
		return next(ctx, method, req)
	}
}

// unsendable returns the refusal of res, the result of a resources/read,
// prompts/get, completion/complete, prompts/list or
// resources/templates/list, or of a method the server added
// (mcp.AddReceivingCustomMethod), when a part of it is nested more than
// maxOutputDepth levels deep (go-sdk v1.8.0's client refuses a message
// nested beyond 1000 levels and closes its session, so every later request
// of the caller would fail), could not be encoded (the go-sdk would send
// no answer) or would be sent as bytes that are not UTF-8: a JSON-RPC
// error, as for INVALID_RESPONSE, whose message names no part; and so is
// a result whose _meta cannot be read (see metaReadable: go-sdk v1.8.0
// reads it after every middleware, and panics), and a prompt's message
// whose content block is nil or a nil pointer (see restBytes). Of a
// standard result only the parts that can nest, fail or hold raw bytes
// are read: a _meta (of the result, of a content, block, prompt or
// template), a template's annotations (a NaN priority), the input it asks
// for. Any other result (a custom method's, of any type) is encoded once
// whole. Its size is not capped: [Options].MaxOutputBytes is for tool
// results.
func (g *Guard) unsendable(method string, res mcp.Result) error {
	if res != nil && !metaReadable(res) {
		return g.malformed(method, errors.New("the result's _meta cannot be read (a nil pointer)"))
	}
	var err error
	switch r := res.(type) {
	case *mcp.ReadResourceResult:
		if r == nil {
			return nil
		}
		var parts mcp.CallToolResult // restBytes reads the parts that nest
		parts.Meta, parts.InputRequests = r.Meta, r.InputRequests
		for _, c := range r.Contents {
			if c != nil {
				parts.Content = append(parts.Content, &mcp.EmbeddedResource{Resource: c})
			}
		}
		_, err = restBytes(&parts)
	case *mcp.GetPromptResult:
		if r == nil {
			return nil
		}
		var parts mcp.CallToolResult
		parts.Meta, parts.InputRequests = r.Meta, r.InputRequests
		for _, m := range r.Messages {
			if m != nil {
				parts.Content = append(parts.Content, m.Content)
			}
		}
		_, err = restBytes(&parts)
	case *mcp.CompleteResult:
		if r == nil {
			return nil
		}
		err = sendableMeta(r.Meta) // its values are Go strings, sent as UTF-8
	case *mcp.ListPromptsResult:
		if r == nil {
			return nil
		}
		err = sendableMeta(r.Meta)
		for _, p := range r.Prompts {
			if p != nil && err == nil {
				err = sendableMeta(p.Meta) // the rest are Go strings
			}
		}
	case *mcp.ListResourceTemplatesResult:
		if r == nil {
			return nil
		}
		err = sendableMeta(r.Meta)
		for _, t := range r.ResourceTemplates {
			if t != nil && err == nil {
				err = sendableMeta(t.Meta)
			}
			if t != nil && t.Annotations != nil && err == nil {
				err = sendable("the result", t.Annotations)
			}
		}
	default:
		// A custom method's, of any type (or a subscription's, empty).
		err = sendable("the result", res)
	}
	if err == nil {
		return nil
	}
	return g.malformed(method, err)
}

// metaReadable reports whether res's GetMeta returns, as go-sdk v1.8.0
// has it do after every middleware (on protocol 2026-07-28): a handler's
// nil *T with no error panics there, and so does a result of a custom
// method's that reaches its _meta through a nil embedded pointer (a value
// of a struct{ *mcp.ResultBase } that holds none). The go-sdk's own empty
// result (of resources/subscribe, say), whose GetMeta always panics and
// which the go-sdk never asks, is not asked either.
func metaReadable(res mcp.Result) (ok bool) {
	if nilPointer(res) {
		return false
	}
	if t := reflect.TypeOf(res); t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && t.Elem().NumField() == 0 {
		return true // no field, so no _meta: the go-sdk's empty result
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	res.GetMeta()
	return true
}

// nilPointer reports whether v holds a nil pointer.
func nilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// malformed returns the refusal of a result of method that its caller's
// client could not read (see unsendable), err saying why, and logs it.
func (g *Guard) malformed(method string, err error) error {
	d := Deny(CodeInvalidResponse, "the server returned a malformed result")
	d.CorrelationID = g.ids.Next()
	g.log.Error("mcpguard: result refused", "method", method, "correlation_id", d.CorrelationID, "err", err)
	return d.JSONRPCError(0)
}

// panicked returns the refusal of a request of method that panicked below
// the guard with r, as a malformed result (see malformed), and logs it
// with the panic value and the stack, as a tool handler's panic is logged:
// where it happened (a handler of the server's own, say) is not lost. A
// request to the client made for a tool call (ctx is its handler's) has
// the call's correlation id, which the call's refusal then carries: the
// client is told the id of the call's audit record.
func (g *Guard) panicked(ctx context.Context, method string, r any) error {
	d := Deny(CodeInvalidResponse, "the server returned a malformed result")
	if d.CorrelationID = correlationFrom(ctx); d.CorrelationID == "" {
		d.CorrelationID = g.ids.Next()
	}
	g.log.Error("mcpguard: result refused", "method", method, "correlation_id", d.CorrelationID, "panic", panicText(r), "stack", string(debug.Stack()))
	return d.JSONRPCError(0)
}

// sendable fails on v, a part of a result (part names it), that the
// go-sdk could not encode (or would panic encoding: see marshal), would
// send as bytes that are not UTF-8 (a json.RawMessage or a MarshalJSON in
// it: encoding/json checks that their bytes are JSON, not that they are
// UTF-8) or whose encoding nests more than maxOutputDepth levels deep, as
// restBytes does a part of a tool's result.
func sendable(part string, v any) error {
	raw, err := marshal(v)
	if err != nil {
		return errors.New(part + " does not marshal")
	}
	return sendableJSON(part, raw)
}

// marshal is json.Marshal that fails, rather than panics, on v with a
// MarshalJSON that panics: encoding/json recovers none, and go-sdk v1.8.0's
// content blocks panic on a nil one they hold (a *mcp.ToolResultContent's,
// or a nil pointer's where a mcp.Content is encoded), so the go-sdk's
// encoding of an answer holding one would end the process.
func marshal(v any) (raw []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			raw, err = nil, errors.New("encoding panicked")
		}
	}()
	return json.Marshal(v)
}

// sendableTool is sendable for a tool, whose parts (its _meta, its
// schemas) nest one level below the tool itself: a part is refused, as a
// result's, when it nests more than maxOutputDepth levels deep.
func sendableTool(t *mcp.Tool) error {
	raw, err := json.Marshal(t)
	switch {
	case err != nil:
		return errors.New("the tool does not marshal")
	case !utf8.Valid(raw):
		return errors.New("the tool is not UTF-8 once encoded")
	case jsondepth.Of(raw) > maxOutputDepth+1:
		return errNestedOutput("a part of the tool")
	}
	return nil
}

// sendableJSON is sendable for raw, a part already encoded.
func sendableJSON(part string, raw []byte) error {
	if !utf8.Valid(raw) {
		return errors.New(part + " is not UTF-8 once encoded")
	}
	if nestedTooDeep(raw) {
		return errNestedOutput(part)
	}
	return nil
}

// sendableMeta is sendable for a _meta, read only when it has a key.
func sendableMeta(m mcp.Meta) error {
	if len(m) == 0 {
		return nil
	}
	return sendable("the result", m)
}
