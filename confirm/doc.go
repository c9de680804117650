// Package confirm implements mcpguard's signed one-time confirmation for
// dangerous writes: a human, asked through the MCP multi round-trip
// (elicitation), must approve the exact action before the tool runs.
//
// # Flow
//
// A guard in front of a tool marked "confirm" does, for each tools/call:
//
//  1. No RequestState on the request: compute the argument hash with
//     [ArgsSHA256], sign a state with [Signer.Issue] and return [Ask] with a
//     message from [Describe]. The tool does not run.
//  2. A RequestState on the request: call [Signer.Verify] with the caller's
//     subject, the tool and the hash of the arguments of this request. Any
//     error refuses the call with CONFIRMATION_REQUIRED. Then read the
//     human's answer with [Answer]: only "accept" runs the tool; "decline"
//     and "cancel" do not. Because Verify has already consumed the nonce, a
//     declined state cannot later be replayed with an accepting answer.
//
// A guard that checks more after the confirmation (limits, a write-ahead
// audit record) and must leave the state to a retry when one of those
// refuses splits Verify in three: [Signer.Check] verifies everything but
// the nonce and returns a [Ticket]; [Ticket.Used] then refuses a state used
// already, without recording anything, so that a replay is refused before
// it is charged or recorded; and [Ticket.Consume], once the call is
// admitted, uses the state up. Only Consume is authoritative: two
// concurrent calls with the same unused state can both pass Used, and only
// one of them passes Consume. Used tells a used state only with a nonce
// store that implements [NonceChecker] (the built-in ones do). Such a
// guard consumes the ticket of a "decline" or "cancel" too, before it
// answers: a state left unused could be sent again with "accept".
//
// On protocol 2026-07-28 the client performs the retry itself. For clients
// on older protocol versions (2025-11-25) the go-sdk's server middleware turns
// the input request into an elicitation/create round trip and re-invokes the
// handler with the answer, so the same guard code serves both. The guard
// should count the logical call once against rate and spend limits: its
// call rate in the round that asks, so that a caller cannot ask the human
// without limit, and its spend in the round that runs the tool (as
// mcpguard's Guard does); counted only in the round that carries a
// RequestState, asking would cost nothing.
//
// # The state
//
// The state is base64url(payload) "." base64url(HMAC-SHA256(
// "mcpguard/confirm\x00" ‖ payload)). The payload holds a format version,
// the signing key id, the subject, the tool, the SHA-256 of the canonical
// arguments, the expiry (unix seconds; default two minutes after issue)
// and a 16-byte random nonce. It is integrity protected, not encrypted:
// the client can read all of it, including two things it did not send:
// the subject the server authenticated it as (which a bearer token or a
// gateway maps on the server, an e-mail or an internal id, say) and the
// signing key's id. Choose key ids that say nothing secret.
// Keys are rotated by listing the new key first and keeping the old one
// until states signed with it have expired. Replicas that share the keys
// are rotated in two rounds: first each lists the new key second (it
// verifies states signed with it, and signs with the old one), then, once
// every replica has it, each lists it first; a replica that signed with a
// key another does not hold yet would have its states refused there.
//
// # Security
//
// An argument such as confirm: true supplied by the model is never approval:
// approval is only an "accept" elicitation answer arriving with a valid,
// unexpired, unused state bound to the same caller, tool and arguments.
// Verify checks everything before it consumes the nonce, so a foreign
// caller's failed replay cannot burn the owner's confirmation. What this
// proves is that the authenticated client answered the elicitation for those
// exact arguments; like any MCP elicitation it cannot prove that a person,
// rather than the client software, clicked. A state is bound to the
// subject alone, not to the issuer, tenant or session it came from: a
// server whose authenticators can give two people one subject (the same
// user id from two identity providers, say) must make subjects unique,
// by a prefix per issuer for instance. Error messages never contain keys,
// arguments or subjects.
//
// For several replicas, share one nonce store, for example
// [github.com/mcpguard/mcpguard/confirm/redisnonce].
package confirm
