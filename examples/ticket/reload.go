package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/mcpguard/mcpguard/internal/hangup"
	"github.com/mcpguard/mcpguard/policy"
)

// A reloader reads --config again on SIGHUP and applies it to the app:
// at once once the app is made, and for a SIGHUP that came before (the
// start read the file before it waited on Redis or PostgreSQL, which may
// take seconds), when it is. Reloads run one at a time, so the last one
// reads the file last. Safe for concurrent use.
type reloader struct {
	log  *slog.Logger
	path string // --config; "" for the embedded copy, which cannot change
	mu   sync.Mutex
	a    *app // guarded by mu; nil until made
	// pending: a SIGHUP came before a was made. Guarded by mu.
	pending bool
	// closed: the server is shutting down (closing). Guarded by mu.
	closed bool
}

// hangup reloads the configuration, or, before the app is made, has it
// reloaded when it is.
func (rl *reloader) hangup() {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.closed {
		rl.log.Info("SIGHUP while the server is shutting down: --config not read again", "config", rl.shown())
		return
	}
	if rl.a == nil {
		rl.pending = true
		rl.log.Info("SIGHUP during the start: --config will be read again once the server is made", "config", rl.shown())
		return
	}
	rl.reload()
}

// made gives rl the app a, and reloads the configuration if a SIGHUP came
// before.
func (rl *reloader) made(a *app) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.a = a
	if rl.pending {
		rl.pending = false
		rl.reload()
	}
}

// closing ends the reloads, before the app is closed at shutdown: a
// SIGHUP from then on, before its handler stops, reloads nothing. A
// reload under way ends first.
func (rl *reloader) closing() {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.closed = true
}

// shown names the configuration in the log.
func (rl *reloader) shown() string {
	if rl.path == "" {
		return defaultConfigName
	}
	return rl.path
}

// reload applies the file at rl.path to rl.a and logs the outcome: at
// level INFO what changed and the file's SHA-256, at level ERROR why the
// file was refused, the app keeping the configuration it has. Called with
// rl.mu held.
func (rl *reloader) reload() {
	if rl.path == "" {
		rl.log.Info("SIGHUP: no --config file to read again (the embedded server.yaml does not change); nothing reloaded")
		return
	}
	changes, sum, err := rl.a.reload(rl.path)
	if err != nil {
		args := []any{"config", rl.path}
		if sum != "" {
			args = append(args, "sha256", sum)
		}
		rl.log.Error("SIGHUP: --config not reloaded; calls are decided by the configuration the server had", append(args, "err", err)...)
		return
	}
	changed := "none"
	if len(changes) > 0 {
		changed = strings.Join(changes, "; ")
	}
	rl.log.Info("SIGHUP: --config reloaded; calls are decided by it from now on", "config", rl.path, "sha256", sum, "changed", changed)
}

// reload reads the configuration file at path again, checks it as the
// start does (strict parsing, the caps, the registry check against the
// tools in code), and makes it the configuration in force: its policy
// (the write allowlist, each tool's class and cost) decides the calls
// that come after, its registry is what list_tools and GET /tools show.
// It returns what changed, as "key: old -> new" lines, and the file's
// SHA-256 (once read). A file that changes what only a restart applies
// (the tools and their descriptions, rate_limit, dry_run) is refused
// whole, as is one the start would refuse, one the guard refuses (see
// [mcpguard.Guard.SetPolicy]), and a path that does not name a regular
// file when it is opened (readRegular): reading a named pipe no process
// writes to would wait for a writer, and the SIGHUP handler with it. On
// an error the configuration in force is kept.
func (a *app) reload(path string) (changes []string, sum string, err error) {
	data, err := readRegular(path)
	if err != nil {
		return nil, "", err
	}
	h := sha256.Sum256(data)
	sum = hex.EncodeToString(h[:])
	c, err := parseConfig(path, data)
	if err != nil {
		return nil, sum, err
	}
	if err := checkRegistry(path, c, tools(a.tickets, a.cfg)); err != nil {
		return nil, sum, err
	}
	old := a.cfg()
	if restart := restartChanges(old, c); len(restart) > 0 {
		return nil, sum, fmt.Errorf("%s: %s changed, which only a restart applies; the whole file is refused (a reload applies allowed_write_tools and cost_units)", path, strings.Join(restart, ", "))
	}
	pol, err := policy.New(c.policyConfig())
	if err != nil {
		return nil, sum, fmt.Errorf("%s: %w", path, err)
	}
	if err := a.guard.SetPolicy(pol); err != nil {
		return nil, sum, fmt.Errorf("%s: %w", path, err)
	}
	a.conf.Store(c)
	return policyChanges(old, c), sum, nil
}

// readRegular reads the regular file at path, as readConfig does, but
// refuses what is no regular file when it is opened (hangup.OpenRegular).
func readRegular(path string) ([]byte, error) {
	f, err := hangup.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readConfigFile(path, f)
}

// restartChanges names what differs between the configurations old and
// c that the running server cannot take: the tools (one added or
// removed) and their descriptions, which clients were given in
// tools/list; rate_limit, which made the limiter; dry_run, a guard
// option.
func restartChanges(old, c *config) []string {
	var out []string
	if old.DryRun != c.DryRun {
		out = append(out, "dry_run")
	}
	o, n := old.RateLimit, c.RateLimit
	if o.CallsPerMin != n.CallsPerMin {
		out = append(out, "rate_limit.calls_per_min")
	}
	if o.CostPerSession != n.CostPerSession {
		out = append(out, "rate_limit.cost_per_session")
	}
	if !samePtr(o.CallsPerUser, n.CallsPerUser) {
		out = append(out, "rate_limit.calls_per_user")
	}
	if !samePtr(o.CostPerUser, n.CostPerUser) {
		out = append(out, "rate_limit.cost_per_user")
	}
	if o.WindowSeconds != n.WindowSeconds {
		out = append(out, "rate_limit.window_seconds")
	}
	for _, name := range old.toolNames() {
		if _, ok := c.Tools[name]; !ok {
			out = append(out, "tools."+name+" (removed)")
		} else if old.description(name) != c.description(name) {
			out = append(out, "tools."+name+".description")
		}
	}
	for _, name := range c.toolNames() {
		if _, ok := old.Tools[name]; !ok {
			out = append(out, "tools."+name+" (added)")
		}
	}
	return out
}

// policyChanges describes what differs between the configurations old
// and c in what the policy holds: the write allowlist, and each tool's
// class and cost. Both have the same tools (restartChanges).
func policyChanges(old, c *config) []string {
	var out []string
	if o, n := allowlist(old), allowlist(c); !slices.Equal(o, n) {
		out = append(out, fmt.Sprintf("allowed_write_tools: %v -> %v", o, n))
	}
	for _, name := range c.toolNames() {
		o, n := old.Tools[name], c.Tools[name]
		if *o.ReadOnly != *n.ReadOnly {
			out = append(out, fmt.Sprintf("tools.%s.read_only: %v -> %v", name, *o.ReadOnly, *n.ReadOnly))
		}
		if o.CostUnits != n.CostUnits {
			out = append(out, fmt.Sprintf("tools.%s.cost_units: %v -> %v", name, o.CostUnits, n.CostUnits))
		}
	}
	return out
}

// allowlist returns c's allowed_write_tools sorted, without repeats.
func allowlist(c *config) []string {
	return slices.Compact(slices.Sorted(slices.Values(c.AllowedWriteTools)))
}

// samePtr reports whether a and b are both nil, or point to equal values.
func samePtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
