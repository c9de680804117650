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
// A sealed state reads mrtrPrefix, a flag, '~', the signed state (base64url
// and '.'), '~', the handler's state. The flag says what the round that
// issued it was: 'c' a real call whose confirmation passed, 'd' a dry run,
// '-' any other real call. The flag is part of the signed claims.
const mrtrPrefix = "mcpguard.mrtr1"

// mrtrTool is the tool claim of a sealed state of a call of c's tool: no
// tool name starts with a NUL, so it is never a confirmation's. It holds
// the class of the tool's rule too: a next round whose tool the policy
// made a write since (Guard.SetPolicy) is another call, charged as one,
// not the uncharged next round of a read.
func mrtrTool(c *call, flag byte) string {
	class := "-"
	if c.rule != nil {
		class = c.rule.Class.String()
	}
	return "\x00mrtr-" + string(flag) + "\x00" + class + "\x00" + c.name
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
// verify (err says why): expired, used already, or not this caller's,
// tool's or arguments'. A nonce store that could not be asked
// (confirm.ErrStore) is the server's fault, not the state's: refused
// UPSTREAM_UNAVAILABLE, retryable (see storeDenial).
func sealedStateDenial(err error) *DenialError {
	if errors.Is(err, confirm.ErrStore) {
		return storeDenial("the request state could not be checked: the server's state store is unavailable; try again shortly")
	}
	return Deny(CodeInvalidArguments, "the request state is expired, already used or for another call; call the tool again")
}

// sealState replaces the handler's RequestState in res with a sealed one.
func (g *Guard) sealState(c *call, res *mcp.CallToolResult) error {
	args, err := confirm.ArgsSHA256(c.raw)
	if err != nil {
		return err
	}
	flag := byte('-')
	switch {
	case c.dryRun:
		flag = 'd'
	case c.confirmed:
		flag = 'c'
	}
	st, err := g.mrtr.Issue(g.now(), confirm.Claims{Subject: c.id.Principal.Subject, Tool: mrtrTool(c, flag), ArgsSHA256: mrtrHash(args, res.RequestState)})
	if err != nil {
		return err
	}
	res.RequestState = mrtrPrefix + string(flag) + "~" + st + "~" + res.RequestState
	return nil
}

// openState checks the sealed state of a retry, refusing one used already,
// and gives the handler its own state back in req. It sets c.retry, and
// c.confirmed when the round that sealed it was confirmed. The state of a
// dry run opens only for a dry run: its round spent nothing and asked no
// confirmation. A dry run may carry a real round's state (a preview of
// the next round): it is checked but not used up, and c.retry stays false.
func (g *Guard) openState(ctx context.Context, req *mcp.CallToolRequest, c *call) error {
	rest := strings.TrimPrefix(req.Params.RequestState, mrtrPrefix)
	if len(rest) < 2 || rest[1] != '~' || !strings.ContainsRune("cd-", rune(rest[0])) {
		return errors.New("malformed sealed state")
	}
	flag := rest[0]
	st, inner, ok := strings.Cut(rest[2:], "~")
	if !ok {
		return errors.New("malformed sealed state")
	}
	if flag == 'd' && !c.dryRun {
		return errors.New("the state of a dry run, on a call that is not one")
	}
	args, err := confirm.ArgsSHA256(c.raw)
	if err != nil {
		return err
	}
	claims := confirm.Claims{Subject: c.id.Principal.Subject, Tool: mrtrTool(c, flag), ArgsSHA256: mrtrHash(args, inner)}
	now := g.now()
	t, err := g.mrtr.Check(now, st, claims)
	if err != nil {
		return err
	}
	// A state used already is refused now, before the round is charged or
	// gets a write-ahead intent; an unused one is used up when the call is
	// admitted (consume).
	if err := t.Used(ctx, now); err != nil {
		return err
	}
	req.Params.RequestState = inner
	c.confirmed = flag == 'c'
	if c.dryRun && flag != 'd' {
		// A preview of a real call's next round: the state is checked,
		// not used up, so that the real round can follow with it, and
		// the preview counts as any dry run does (once against the call
		// rate: it is not that round).
		c.preview = true
		return nil
	}
	c.ticket = &t
	c.retry = true
	c.cost = 0 // the first round was charged the logical call's cost; so says its audit record
	return nil
}

// openRetry opens the sealed state a call carries, if any (see openState),
// and returns the refusal of one that does not open.
func (g *Guard) openRetry(ctx context.Context, req *mcp.CallToolRequest, c *call) *DenialError {
	if !strings.HasPrefix(req.Params.RequestState, mrtrPrefix) {
		return nil
	}
	if err := g.openState(ctx, req, c); err != nil {
		c.detail = "sealed request state: " + err.Error()
		return sealedStateDenial(err)
	}
	c.detail = nextRoundDetail
	if c.preview {
		c.detail = previewDetail
	}
	return nil
}

// nextRoundDetail is the audit detail of a multi round-trip's later round;
// a refusal of the round adds its reason ([Guard.deny]).
const nextRoundDetail = "next round of a multi round-trip call"

// previewDetail is the audit detail of a dry run of a later round (a
// preview: see openState), which uses no state up.
const previewDetail = "dry run of the " + nextRoundDetail + " (its state not used up)"

// sealRetry seals the RequestState of a handler's result that asks for
// more input, and returns the refusal of a result it cannot seal.
func (g *Guard) sealRetry(c *call, res *mcp.CallToolResult) *DenialError {
	if res == nil || res.RequestState == "" {
		return nil
	}
	if err := g.sealState(c, res); err != nil {
		c.detail = "sealing the request state: " + err.Error()
		return Deny(CodeInternal, "the tool's request for input could not be prepared")
	}
	return nil
}
