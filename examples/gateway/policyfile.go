package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

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
// returns the file's SHA-256 too, in hex, for the logs. Its errors are
// usage errors.
func loadPolicy(path string) (*policy.Policy, string, error) {
	return readPolicy(path, false)
}

// reloadablePolicy is loadPolicy for a SIGHUP's reload, which takes what
// is a regular file when it is opened only (hangup.OpenRegular: a named
// pipe would have the SIGHUP handler wait for a writer). (At the start,
// --policy <(...) is read as any file.)
func reloadablePolicy(path string) (*policy.Policy, string, error) {
	return readPolicy(path, true)
}

// readPolicy is loadPolicy; with regular, as reloadablePolicy.
func readPolicy(path string, regular bool) (*policy.Policy, string, error) {
	fail := func(err error) (*policy.Policy, string, error) {
		return nil, "", usageError{fmt.Errorf("--policy %s: %w", path, err)}
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
	return p, hex.EncodeToString(sum[:]), nil
}
