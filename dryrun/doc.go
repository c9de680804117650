// Package dryrun holds the building blocks of mcpguard's dry-run guard: a
// context marker that tells a dry-run aware handler not to touch its
// downstream, the documented _meta key a client uses to ask for a preview,
// synthetic DRYRUN- identifiers, a secret-free summary and the simulated
// result returned in place of a write.
//
// # Who decides
//
// Dry-run is decided by the guard, never by the client alone. The server
// configures it globally or per tool; a client may additionally ask for a
// preview of one call by setting [MetaKey] to true in the _meta of its
// tools/call request (any value but false counts, and the key in any letter
// case: an unclear request gets a preview). For a write tool the guard ORs
// the three (the root package's Options.DryRun, its
// Options.Tools[name].DryRun, and the client's request) with the call's
// context: a call made with a context marked by [NewContext] (a dry-run
// aware handler that serves its dry run by calling another guarded tool
// with the context it was given) is a dry run as well. A read tool's calls
// are never dry runs, whatever asks for one:
//
//	dry := rule.Class == policy.Write &&
//		(opts.DryRun || opts.Tools[name].DryRun ||
//			dryrun.Requested(req.Params.Meta) || dryrun.FromContext(ctx))
//
// [Requested] only ever reports true or false, so the client's value can turn
// dry-run on for a call but can never turn it off where the server turned it
// on.
//
// # What happens in dry-run
//
// A write tool's real handler is not called unless it declared itself dry-run
// aware. An aware handler is called with a context made by [NewContext]; it
// sees [FromContext] report true and must describe what it would do without
// touching its downstream. FromContext is its only sign: a dry run the
// server configured leaves no mark in the request, so an aware handler that
// read [MetaKey] from the request's _meta, or a dry-run flag of its own from
// the arguments (which the model writes), would write for real. The mark
// lives in the context only: a guarded tool the handler calls with that
// context gets a dry run, but one it reaches through an MCP client session
// (whose server sees a request, not the context) or with a context of its
// own (context.Background in a goroutine) does not.
//
// For any other write tool the guard returns [Result]: a simulated result
// carrying a [NewID] identifier, the tool name and a [Summary] of what would
// have happened. It is a success, unless the tool's output schema refuses it
// (a typed tool's usually): a Guard then makes it a tool error (isError),
// which clients do not check against the schema; the stand-alone DryRun
// step, which does not know the schema, always answers a success. A
// write-path step of the root package that treats a call as a dry run
// (Confirm, Limit, DryRun, WriteAhead) answers it itself, so that a handler
// inside it never writes for a client that asked for a preview.
//
// Read tools are unaffected: their handlers run, dry run or not, so a tool
// whose handler writes must be classified a write. Dry-run calls count
// against the call rate and spend nothing, but a dry run whose cost would
// not fit in the spend caps now is refused as the real call would be (see
// the root package's Options.Limiter). A Guard audits them with dry_run:
// true, those refused before they are answered too (for invalid arguments,
// say) once the policy allows the call; a call the policy refuses is no
// dry run (for a chain of stand-alone steps, see the root package's Audit).
//
// Everything in this package is pure and safe for concurrent use.
package dryrun
