package mcpguard

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Middleware wraps a tool handler. Each step of the pipeline is a guard
// usable alone as a Middleware: [Recover], [Audit], [Authenticate],
// [Authorize], [ValidateArguments], [Confirm], [Limit], [DryRun],
// [WriteAhead] and [ValidateOutput]. [Guard] assembles the full pipeline in
// one pass.
//
// Recover, Authenticate, Authorize, ValidateArguments and ValidateOutput
// take no [Options]: they always refuse with a tool-error result, except
// that Authorize answers a tool the caller may not see with the go-sdk's
// JSON-RPC error for an unknown tool ([SchemaSafe] outside them does what
// [Options].SchemaSafeErrors does). Confirm, Limit, DryRun and WriteAhead
// render their refusals as opts says ([Options].ProtocolErrors and
// SchemaSafeErrors).
type Middleware func(mcp.ToolHandler) mcp.ToolHandler

// SchemaSafe leaves StructuredContent out of every refusal that the steps
// (or the handler) inside it answer in a tool-error result, but
// UNAUTHENTICATED, as [Options].SchemaSafeErrors does for a [Guard]: the
// error is then in the text content alone, where [DenialOf] reads it, and
// a client that checks a tool error's structured content against the
// tool's output schema (the TypeScript SDK's, 1.32) reads the refusal
// instead of throwing -32602. A refusal is a result with IsError set that
// DenialOf reads; other results pass unchanged. Put it outermost in the
// chain of a tool with an output schema, for the steps that take no
// [Options]. An UNAUTHENTICATED refusal, and any refusal of [Authenticate]
// (its Authenticator's UPSTREAM_UNAVAILABLE or cap), keeps its
// StructuredContent, as a Guard's refusal before resolution does: the
// caller may not know the tool, and must not learn which have a schema.
func SchemaSafe() Middleware {
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := next(ctx, req)
			if err != nil || res == nil || !res.IsError || res.StructuredContent == nil {
				return res, err
			}
			if g, ok := res.GetError().(refusedByGuard); ok && g.unresolved {
				return res, nil // before resolution: see above
			}
			if d, ok := DenialOf(res, nil); ok && d.Code != CodeUnauthenticated {
				out := *res
				out.StructuredContent = nil
				return &out, nil
			}
			return res, nil
		}
	}
}

// Chain composes middleware: Chain(a, b, c)(h) == a(b(c(h))). The first
// listed is outermost: it sees the request first and the result last. Nil
// middleware are skipped; Chain() is the identity.
func Chain(ms ...Middleware) Middleware {
	return func(h mcp.ToolHandler) mcp.ToolHandler {
		for i := len(ms) - 1; i >= 0; i-- {
			if ms[i] != nil {
				h = ms[i](h)
			}
		}
		return h
	}
}

// When applies m only to calls for which match returns true; other calls go
// straight to the wrapped handler. A nil match or m makes When the identity.
func When(match func(*mcp.CallToolRequest) bool, m Middleware) Middleware {
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		if match == nil || m == nil {
			return next
		}
		guarded := m(next)
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if match(req) {
				return guarded(ctx, req)
			}
			return next(ctx, req)
		}
	}
}

// ToolNamed returns a matcher for [When] that selects calls to any of names.
func ToolNamed(names ...string) func(*mcp.CallToolRequest) bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(req *mcp.CallToolRequest) bool {
		return req != nil && req.Params != nil && set[req.Params.Name]
	}
}
