package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/mcpguard/mcpguard/internal/hangup"
	"github.com/mcpguard/mcpguard/policy"
)

// A usageError is a mistake in the gateway's configuration that main
// reports with exit status 2, as the flag package reports a bad flag.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode is the exit status for an error of run: 2 for a usage error,
// else 1.
func exitCode(err error) int {
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// loadPolicy reads the rules of the --policy file: JSON as
// policy.ParseConfig reads it, at most policy.MaxConfigBytes, checked by
// policy.New. A rule with "confirm" is refused: the gateway cannot ask a
// human to confirm a call, and refuses every call of such a tool. It
// returns what the logs say of the file too. Its errors are usage errors.
func loadPolicy(path string) (*policy.Policy, policyFacts, error) {
	return readPolicy(path, false)
}

// reloadablePolicy is loadPolicy for a SIGHUP's reload, which takes what
// is a regular file when it is opened only (hangup.OpenRegular: a named
// pipe would have the SIGHUP handler wait for a writer). (At the start,
// --policy <(...) is read as any file.)
func reloadablePolicy(path string) (*policy.Policy, policyFacts, error) {
	return readPolicy(path, true)
}

// readPolicy is loadPolicy; with regular, as reloadablePolicy.
func readPolicy(path string, regular bool) (*policy.Policy, policyFacts, error) {
	fail := func(err error) (*policy.Policy, policyFacts, error) {
		return nil, policyFacts{}, usageError{fmt.Errorf("--policy %s: %w", path, err)}
	}
	open := os.Open
	if regular {
		open = hangup.OpenRegular
	}
	f, err := open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in the message already
		}
		return fail(err)
	}
	defer f.Close()
	// One byte more than allowed, for ParseConfig to say it is too large.
	data, err := io.ReadAll(io.LimitReader(f, policy.MaxConfigBytes+1))
	if err != nil {
		return fail(err)
	}
	cfg, err := policy.ParseConfig(data)
	if err != nil {
		return fail(err)
	}
	const noConfirm = `"confirm": true: the gateway cannot ask a human to confirm a call, and would refuse every call of the tool; leave "confirm" out (a write tool off the write allowlist is refused)`
	for _, r := range cfg.Tools {
		if r.Confirm {
			return fail(fmt.Errorf("tool %q: %s", r.Name, noConfirm))
		}
	}
	if cfg.Default != nil && cfg.Default.Confirm {
		return fail(fmt.Errorf("the default rule: %s", noConfirm))
	}
	p, err := policy.New(cfg)
	if err != nil {
		return fail(err)
	}
	sum := sha256.Sum256(data)
	return p, policyFacts{sum: hex.EncodeToString(sum[:]), hidesBeside: hidesBesideDefault(cfg)}, nil
}

// policyFacts is what the logs say of a --policy file.
type policyFacts struct {
	sum string // its SHA-256, in hex
	// hidesBeside: a caller can tell a tool hidden from it from a missing
	// one (see hidesBesideDefault).
	hidesBeside bool
}

// hiddenToldApart is the warning of a policy that hidesBesideDefault.
const hiddenToldApart = `--policy hides tools from callers without their roles ("show_forbidden" false), and a tool's rule asks for roles its "default" rule does not: a name no rule names is forwarded and answered by the downstream in its own words, such a tool by the gateway (-32601), so a caller can tell it from a missing one; list every tool without a default, or set "show_forbidden": true, where that matters`

// hidesBesideDefault reports whether a caller of cfg can tell a tool
// hidden from it from a missing one: ShowForbidden is off, there is a
// Default rule (a name no rule names is forwarded when the caller meets
// its roles, the downstream answering a missing one) and a tool rule asks
// for roles that the Default's do not imply (some caller meets the
// Default's roles and not the tool's: the gateway answers that tool as
// unknown). A role rule matches names, not tools: it hides a missing name
// it matches as it hides a tool (both answered by the gateway), so it
// tells a caller no more than its pattern.
func hidesBesideDefault(cfg policy.Config) bool {
	if cfg.ShowForbidden || cfg.Default == nil {
		return false
	}
	for _, r := range cfg.Tools {
		if len(r.Roles) == 0 {
			continue
		}
		// Any one of a rule's roles will do: the Default's imply the
		// tool's when each of them is one of the tool's.
		implied := len(cfg.Default.Roles) > 0
		for _, d := range cfg.Default.Roles {
			implied = implied && slices.Contains(r.Roles, d)
		}
		if !implied {
			return true
		}
	}
	return false
}
