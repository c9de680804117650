// Package fastschema validates tool-call arguments against the common
// subset of JSON Schema directly on the raw JSON bytes, without decoding
// them and without allocating for valid input.
//
// It is mcpguard's fast path in front of
// github.com/santhosh-tekuri/jsonschema/v6, which stays the reference: for
// every schema [Compile] accepts, [Schema.Validate] gives exactly the
// verdict of the reference pipeline (duplicate-key check, encoding/json
// decoding with UseNumber, the refusal of invalid UTF-8 and of escaped
// lone UTF-16 surrogates, string length and control-character checks,
// the bound on number literals, v6 validation with formats asserted).
// [Compile] refuses, with ok=false, any schema outside the subset, and the
// caller falls back to v6.
//
// The one deliberate difference: documents nested deeper than 64 levels
// are refused ("arguments are nested too deeply"), where the reference
// would go on to encoding/json's limit of 10000.
//
// Numbers: a literal in the arguments longer than [MaxNumberLen]
// characters or with an exponent beyond ±[MaxNumberExp] is refused,
// wherever it is, as mcpguard refuses it before v6 runs (v6's exact
// arithmetic takes seconds on a megabyte of digits). Within the bound
// the fast path compares literals exactly, as v6 does with json.Number and
// math/big: no float64 overflow (1.8e308), underflow (1e-400 is not 0) or
// rounding (9007199254740993 is not 9007199254740992); 1.0 and 1e400 are
// integers, -0 is 0. A refused literal costs time linear in its length.
//
// Messages are mcpguard's reference messages, word for word, for a
// document with one problem, or several on one value (checked in v6's
// order: type, const and enum, format, then the keywords of the value's
// type): the document itself is "value", types are listed in v6's order,
// a bound is printed as the reference prints it ("<= 100" for 1e2), a
// count bound says its count ("must have at least 2 items"), names are
// cut at 64 bytes and pointers escaped as RFC 6901 says ("~0", "~1") on
// both paths. They may differ for a document with problems in several
// places: the reference names a problem of an object or array itself (a
// missing required or an unknown name, too few items) before one inside
// it, and otherwise the one at the smallest path, walking objects in map
// order; the fast path names the first problem its scan meets. They
// differ too for duplicates (named here by their path, there by the key
// alone).
package fastschema
