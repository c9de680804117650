// Package fastschema validates tool-call arguments against the common
// subset of JSON Schema directly on the raw JSON bytes, without decoding
// them and without allocating for valid input.
//
// It is mcpguard's fast path in front of
// github.com/santhosh-tekuri/jsonschema/v6, which stays the reference: for
// every schema [Compile] accepts, [Schema.Validate] gives exactly the
// verdict of the reference pipeline (duplicate-key check, encoding/json
// decoding with UseNumber, string length and control-character checks, v6
// validation with formats asserted). [Compile] refuses, with ok=false, any
// schema outside the subset, and the caller falls back to v6.
//
// The one deliberate difference: documents nested deeper than 64 levels
// are refused ("arguments are nested too deeply"), where the reference
// would go on to encoding/json's limit of 10000.
//
// Number literals are not bounded in length or exponent: the fast path
// compares them exactly, in time linear in their length. mcpguard's own
// bound on number literals guards the cost of v6's exact arithmetic and
// applies only where v6 checks the arguments (see mcpguard's package
// documentation).
package fastschema
