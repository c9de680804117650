package mcpguard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A handler that needs more input from the user ends its call with input
// requests and a RequestState of its own (the go-sdk's multi round-trip);
// the client calls again with the answers and that state, through the guard.
// DESIGN.md counts the two rounds as one logical call. So the guard seals a
// handler's RequestState into a state of its own, signed and one-time, bound
// to the caller, the tool, the arguments and the handler's state, and
// recording whether the call was confirmed; the call that returns it is the
// retry: it counts nothing more against the limits, is not asked to confirm
// again, and its handler gets its own state back. A sealed state that does
// not verify is refused; a state the guard did not seal reaches the handler
// as it is, in a call counted as a new one (a handler checks its own
// states).
//
// A sealed state reads mrtrPrefix, a flag ('c' for a confirmed call, '-'
// else), '~', the signed state (base64url and '.'), '~', the handler's
// state.
const mrtrPrefix = "mcpguard.mrtr1"

// mrtrTool is the tool claim of a sealed state: no tool name starts with a
// NUL, so it is never a confirmation's.
func mrtrTool(name string, confirmed bool) string {
	if confirmed {
		return "\x00mrtr-confirmed\x00" + name
	}
	return "\x00mrtr\x00" + name
}

// mrtrHash binds the arguments' hash and the handler's state.
func mrtrHash(args, inner string) string {
	h := sha256.New()
	h.Write([]byte(args))
	h.Write([]byte{0})
	h.Write([]byte(inner))
	return hex.EncodeToString(h.Sum(nil))
}

// newMRTRSigner returns the signer of sealed states for a guard without a
// Confirmer: a random key of this process's, so a retry must come back to
// it (with a Confirmer, its keys and nonce store are used, shared by
// replicas).
func newMRTRSigner() (*confirm.Signer, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	return confirm.NewSigner([]confirm.Key{{ID: "mrtr-local", Secret: secret}}, nil)
}

// sealedStateDenial is the refusal of a retry whose sealed state does not
// verify: expired, used already, or not this caller's, tool's or arguments'.
func sealedStateDenial() *DenialError {
	return Deny(CodeInvalidArguments, "the request state is expired, already used or for another call; call the tool again")
}

// sealState replaces the handler's RequestState in res with a sealed one.
func (g *Guard) sealState(c *call, res *mcp.CallToolResult) error {
	args, err := confirm.ArgsSHA256(c.raw)
	if err != nil {
		return err
	}
	confirmed := c.rule.Confirm
	st, err := g.mrtr.Issue(g.now(), confirm.Claims{Subject: c.id.Principal.Subject, Tool: mrtrTool(c.name, confirmed), ArgsSHA256: mrtrHash(args, res.RequestState)})
	if err != nil {
		return err
	}
	flag := "-"
	if confirmed {
		flag = "c"
	}
	res.RequestState = mrtrPrefix + flag + "~" + st + "~" + res.RequestState
	return nil
}

// openState checks the sealed state of a retry and gives the handler its
// own state back in req. It reports whether the call was confirmed.
func (g *Guard) openState(ctx context.Context, req *mcp.CallToolRequest, c *call) (confirmed bool, err error) {
	rest := strings.TrimPrefix(req.Params.RequestState, mrtrPrefix)
	if len(rest) < 2 || rest[1] != '~' || (rest[0] != 'c' && rest[0] != '-') {
		return false, errors.New("malformed sealed state")
	}
	confirmed = rest[0] == 'c'
	st, inner, ok := strings.Cut(rest[2:], "~")
	if !ok {
		return false, errors.New("malformed sealed state")
	}
	args, err := confirm.ArgsSHA256(c.raw)
	if err != nil {
		return false, err
	}
	claims := confirm.Claims{Subject: c.id.Principal.Subject, Tool: mrtrTool(c.name, confirmed), ArgsSHA256: mrtrHash(args, inner)}
	if err := g.mrtr.Verify(ctx, g.now(), st, claims); err != nil {
		return false, err
	}
	req.Params.RequestState = inner
	return confirmed, nil
}
