// Package token holds static bearer-token tables: the parsing of a token
// table from JSON, constant-time lookup, and RFC 6750 bearer extraction. The
// root package's authenticators, the gateway and the example servers share
// it, so the one piece of code that compares secrets exists once.
//
// A token table is a JSON object from token to one of:
//
//	"tok-1": "admin"                               a role
//	"tok-2": ["support", "billing"]                a list of roles
//	"tok-3": {"sub": "svc-etl", "role": "admin"}   a subject and a role
//	"tok-4": {"sub": "ann", "roles": ["a", "b"]}   a subject and roles
//
// A token without "sub" gets a subject derived from a digest of the token,
// never the token itself.
//
// Over stateful Streamable HTTP, [Table.BindSessions] wraps the go-sdk's
// handler so that each MCP session belongs to the principal that opened it.
package token
