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
// case: an unclear request gets a preview). The guard ORs the three:
//
//	dry := cfg.Global || cfg.Tool[name] || dryrun.Requested(req.Params.Meta)
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
// touching its downstream. For any other write tool the guard returns
// [Result]: a simulated result carrying a [NewID] identifier, the tool name
// and a [Summary] of what would have happened. It is a success, unless the
// tool's output schema refuses it (a typed tool's usually): a Guard then
// makes it a tool error (isError), which clients do not check against the
// schema; the stand-alone DryRun step, which does not know the schema,
// always answers a success. Read tools are
// unaffected. Dry-run calls count against the call rate and spend nothing,
// but a dry run whose cost would not fit in the spend caps now is refused
// as the real call would be (see the root package's Options.Limiter); they
// are audited with dry_run: true.
//
// Everything in this package is pure and safe for concurrent use.
package dryrun
