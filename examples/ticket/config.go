package main

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/internal/textsafe"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"go.yaml.in/yaml/v3"
)

// defaultConfig is the server.yaml shipped next to this file, so that
// `go run ./examples/ticket demo` works from anywhere.
//
//go:embed server.yaml
var defaultConfig []byte

// defaultConfigName names the embedded configuration in messages.
const defaultConfigName = "server.yaml (embedded)"

// config is server.yaml.
type config struct {
	DryRun            bool                  `yaml:"dry_run"`
	AllowedWriteTools []string              `yaml:"allowed_write_tools"`
	RateLimit         rateLimit             `yaml:"rate_limit"`
	Tools             map[string]toolConfig `yaml:"tools"`
}

// rateLimit is the per-session budget and, when set, the per-user one: all
// refill over Window. The per-session caps bound a session, which the
// client names (X-Session-Id) or opens (/mcp) at will; the per-user caps
// bound a caller across all its sessions. Nil means no per-user cap.
type rateLimit struct {
	CallsPerMin    int      `yaml:"calls_per_min"`
	CostPerSession float64  `yaml:"cost_per_session"`
	CallsPerUser   *int     `yaml:"calls_per_user"`
	CostPerUser    *float64 `yaml:"cost_per_user"`
	WindowSeconds  float64  `yaml:"window_seconds"`
}

// toolConfig is the registry entry of one tool. ReadOnly is a pointer so
// that a missing classification is an error, never a default.
type toolConfig struct {
	ReadOnly    *bool   `yaml:"read_only"`
	CostUnits   float64 `yaml:"cost_units"`
	Description string  `yaml:"description"`
}

// window returns the limiter window.
func (r rateLimit) window() time.Duration {
	return time.Duration(r.WindowSeconds * float64(time.Second))
}

// maxConfigSize bounds server.yaml: a larger file (or a device such as
// /dev/zero) is refused rather than read whole into memory.
const maxConfigSize = 1 << 20

// loadConfig reads the configuration at path, or the embedded default when
// path is empty.
func loadConfig(path string) (*config, string, error) {
	c, name, _, err := loadConfigSum(path)
	return c, name, err
}

// loadConfigSum is loadConfig that also returns the SHA-256 of the bytes
// it read (hex), which the start logs as a reload does, so that the two
// can be compared.
func loadConfigSum(path string) (c *config, name, sum string, err error) {
	data, name := defaultConfig, defaultConfigName
	if path != "" {
		name = path
		if data, err = readConfig(path); err != nil {
			return nil, name, "", err
		}
	}
	h := sha256.Sum256(data)
	c, err = parseConfig(name, data)
	return c, name, hex.EncodeToString(h[:]), err
}

// readConfig reads the file at path, at most maxConfigSize bytes.
func readConfig(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readConfigFile(path, f)
}

// readConfigFile reads f, opened at path, at most maxConfigSize bytes.
func readConfigFile(path string, f *os.File) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigSize {
		return nil, fmt.Errorf("%s: larger than 1 MiB, not a server.yaml", path)
	}
	return data, nil
}

// parseConfig parses and checks server.yaml strictly: unknown keys, a key
// given twice or null, a second document, missing or malformed values are
// errors naming the file (and, where there is one, the line).
func parseConfig(name string, data []byte) (*config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c config
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty configuration", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: more than one YAML document", name)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil { // decoded above: cannot fail
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := checkNodes(&doc, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := checkStated(data); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &c, nil
}

// stated is what server.yaml must write out, never left to the decoder's
// zero value: whether writes are simulated (false would make allowlisting
// a write enough to run it for real) and what each tool costs (0 would
// take it off the spend cap). A key that is missing or null (~, null, no
// value) decodes to nil here. The per-user caps may be left out, but not
// written null, which would read as no cap.
type stated struct {
	DryRun    *bool          `yaml:"dry_run"`
	RateLimit map[string]any `yaml:"rate_limit"`
	Tools     map[string]struct {
		CostUnits *float64 `yaml:"cost_units"`
	} `yaml:"tools"`
}

// checkStated refuses a configuration, already decoded strictly, that
// leaves dry_run or a tool's cost_units out or null, or a per-user cap
// null.
func checkStated(data []byte) error {
	var s stated
	if err := yaml.Unmarshal(data, &s); err != nil { // decoded above: cannot fail
		return err
	}
	if s.DryRun == nil {
		return errors.New("dry_run is required (true: write tools simulate; false: allowlisted writes run for real)")
	}
	for _, k := range []string{"calls_per_user", "cost_per_user"} {
		if v, ok := s.RateLimit[k]; ok && v == nil {
			return fmt.Errorf("rate_limit.%s is null: give a number, or leave the key out for no per-user cap", k)
		}
	}
	names := make([]string, 0, len(s.Tools))
	for n := range s.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if s.Tools[n].CostUnits == nil {
			return fmt.Errorf("tools.%s.cost_units is required (0 for a tool that costs nothing)", n)
		}
	}
	return nil
}

// checkNodes refuses what the YAML decoder takes silently for something
// else: a null key (~, null), which it drops with everything under it; a
// calls_per_min that is not an integer, which it cuts to one (5.5 would be
// 5); and a number written with a leading zero (060), which it reads as
// octal (48), as YAML 1.1 did and YAML 1.2 readers do not. It visits each
// node where the document defines it, never through an alias; path is the
// keys leading to n (a merge key adds none).
func checkNodes(n *yaml.Node, path []string) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!null" {
				return fmt.Errorf("line %d: a null key (~ or null): every key must be a name", k.Line)
			}
			if err := checkNodes(k, path); err != nil {
				return err
			}
			vpath := path
			if k.ShortTag() != "!!merge" {
				vpath = append(slices.Clip(path), k.Value)
			}
			if err := checkNumber(vpath, v); err != nil {
				return err
			}
			if err := checkNodes(v, vpath); err != nil {
				return err
			}
		}
		return nil
	}
	for _, c := range n.Content {
		if err := checkNodes(c, path); err != nil {
			return err
		}
	}
	return nil
}

// checkNumber checks v, the value at path, when path is one of the
// numbers of server.yaml: calls_per_min and calls_per_user must be
// integers, no number may be an integer with a leading zero, and none
// written other than 0 may read as 0 (1e-400: a cost that counts nothing).
func checkNumber(path []string, v *yaml.Node) error {
	name := strings.Join(path, ".")
	switch {
	case len(path) == 2 && path[0] == "rate_limit" && slices.Contains([]string{"calls_per_min", "cost_per_session", "calls_per_user", "cost_per_user", "window_seconds"}, path[1]):
	case len(path) == 3 && path[0] == "tools" && path[2] == "cost_units":
	default:
		return nil
	}
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if (name == "rate_limit.calls_per_min" || name == "rate_limit.calls_per_user") && (v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int") {
		return fmt.Errorf("line %d: %s must be a whole number, not %q", v.Line, name, v.Value)
	}
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!int" {
		if digits, ok := leadingZero(v.Value); ok {
			return fmt.Errorf("line %d: %s %s has a leading zero, which this YAML reader takes for octal; write %s (or 0o%s if octal is meant)",
				v.Line, name, v.Value, digits, digits)
		}
	}
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!float" && readsAsZero(v.Value) {
		// 1e-400: a cost its author meant to count, read as none (and
		// -1e-400 as -0, which passes as not negative).
		return fmt.Errorf("line %d: %s %s reads as 0, below the smallest number this reader holds; write 0, or a number it holds", v.Line, name, v.Value)
	}
	return nil
}

// readsAsZero reports whether s, a float as YAML writes it, has a digit
// other than 0 before its exponent but reads as the float64 0.
func readsAsZero(s string) bool {
	s = strings.ReplaceAll(s, "_", "")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != 0 {
		return false
	}
	mantissa, _, _ := strings.Cut(strings.ToLower(s), "e")
	return strings.ContainsAny(mantissa, "123456789")
}

// leadingZero reports whether s, an integer as YAML writes it, has a
// digit after a leading zero (underscores aside), as 060 and 0_60 do, and
// returns its digits without the leading zeros.
func leadingZero(s string) (digits string, ok bool) {
	s = strings.ReplaceAll(strings.TrimLeft(s, "+-"), "_", "")
	if len(s) < 2 || s[0] != '0' || s[1] < '0' || s[1] > '9' {
		return "", false
	}
	if digits = strings.TrimLeft(s, "0"); digits == "" {
		digits = "0"
	}
	return digits, true
}

func (c *config) check() error {
	r := c.RateLimit
	if r.CallsPerMin < 1 {
		return errors.New("rate_limit.calls_per_min must be at least 1")
	}
	if !(r.CostPerSession > 0) || math.IsInf(r.CostPerSession, 0) {
		return errors.New("rate_limit.cost_per_session must be a positive number")
	}
	if r.CallsPerUser != nil && *r.CallsPerUser < 1 {
		return errors.New("rate_limit.calls_per_user must be at least 1 (leave it out for no per-user cap)")
	}
	if r.CostPerUser != nil && (!(*r.CostPerUser > 0) || math.IsInf(*r.CostPerUser, 0)) {
		return errors.New("rate_limit.cost_per_user must be a positive number (leave it out for no per-user cap)")
	}
	if w := r.window(); w < limiter.MinWindow || w > limiter.MaxWindow || math.IsNaN(r.WindowSeconds) {
		return errors.New("rate_limit.window_seconds must be between 0.001 and 50 years")
	}
	if len(c.Tools) == 0 {
		return errors.New("tools: no tool configured")
	}
	for _, name := range c.toolNames() {
		t := c.Tools[name]
		if t.ReadOnly == nil {
			return fmt.Errorf("tools.%s.read_only is required (true or false)", name)
		}
		if !(t.CostUnits >= 0) || math.IsInf(t.CostUnits, 0) {
			return fmt.Errorf("tools.%s.cost_units must be a non-negative number", name)
		}
		if r, ok := hiddenRune(t.Description); ok {
			return fmt.Errorf("tools.%s.description contains U+%04X, a control, format or other character that a model reads and a reviewer does not see", name, r)
		}
	}
	for _, name := range c.AllowedWriteTools {
		t, ok := c.Tools[name]
		switch {
		case !ok:
			return fmt.Errorf("allowed_write_tools: %q is not a configured tool", name)
		case *t.ReadOnly:
			return fmt.Errorf("allowed_write_tools: %q is a read-only tool", name)
		}
	}
	// A tool that can be called (a read, or an allowlisted write) and costs
	// more than a spend cap could never be: the limiter admits no call of
	// more than its Max (and mcpguard.New refuses it, in the library's terms).
	for _, name := range c.toolNames() {
		t := c.Tools[name]
		if !*t.ReadOnly && !c.writeEnabled(name) {
			continue
		}
		if t.CostUnits > r.CostPerSession {
			return fmt.Errorf("tools.%s.cost_units %v is more than rate_limit.cost_per_session %v: no call of it would ever fit; lower the cost or raise the cap", name, t.CostUnits, r.CostPerSession)
		}
		if r.CostPerUser != nil && t.CostUnits > *r.CostPerUser {
			return fmt.Errorf("tools.%s.cost_units %v is more than rate_limit.cost_per_user %v: no call of it would ever fit; lower the cost or raise the cap", name, t.CostUnits, *r.CostPerUser)
		}
	}
	return nil
}

// hiddenRune returns the first character of s that a person reading it
// cannot see but a model reads, as [textsafe.CleanLines] drops them:
// control characters other than tab and line feed (terminal escapes,
// carriage returns), format characters (bidirectional overrides,
// zero-width characters, the tag characters that spell hidden ASCII), the
// other characters Unicode says are shown as nothing (the Hangul fillers
// U+3164 and U+FFA0, the combining grapheme joiner U+034F), line and
// paragraph separators, and the supplementary variation selectors.
func hiddenRune(s string) (rune, bool) {
	for _, r := range s {
		if textsafe.CleanLines(string(r), 1) == "" {
			return r, true
		}
	}
	return 0, false
}

// toolNames returns the configured tool names, sorted.
func (c *config) toolNames() []string {
	names := make([]string, 0, len(c.Tools))
	for n := range c.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// description returns the description of the tool name that clients are
// given in tools/list and the registry shows: server.yaml's, or when that
// is empty the one in code.
func (c *config) description(name string) string {
	if d := c.Tools[name].Description; d != "" {
		return d
	}
	return codeDescription(name)
}

// writeEnabled reports whether the write tool name is allowlisted.
func (c *config) writeEnabled(name string) bool {
	return slices.Contains(c.AllowedWriteTools, name)
}

// policyConfig maps the registry onto the guard's policy: each tool's class
// and cost, and the write allowlist.
func (c *config) policyConfig() policy.Config {
	var pc policy.Config
	for _, name := range c.toolNames() {
		t := c.Tools[name]
		class := policy.Write
		if *t.ReadOnly {
			class = policy.Read
		}
		pc.Tools = append(pc.Tools, policy.ToolRule{Name: name, Class: class, Cost: t.CostUnits})
	}
	pc.WriteAllowlist = append([]string(nil), c.AllowedWriteTools...)
	return pc
}

// limits maps rate_limit onto the limiter: per session, calls and cost
// units per window, and per user (the authenticated subject, across all
// its sessions) those of them that are set.
func (c *config) limits() []limiter.Limit {
	r := c.RateLimit
	w := r.window()
	ls := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: float64(r.CallsPerMin), Window: w},
		{Kind: limiter.Spend, Scope: limiter.Session, Max: r.CostPerSession, Window: w},
	}
	if r.CallsPerUser != nil {
		ls = append(ls, limiter.Limit{Kind: limiter.Rate, Scope: limiter.User, Max: float64(*r.CallsPerUser), Window: w})
	}
	if r.CostPerUser != nil {
		ls = append(ls, limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Max: *r.CostPerUser, Window: w})
	}
	return ls
}

// checkRegistry is the start-up cross-check of the tools in code against
// the configuration: a tool in code without a configuration entry, or
// whose read/write classification differs from it, and a configured tool
// with no code, all refuse to start.
func checkRegistry(name string, c *config, tools []*toolDef) error {
	pol, err := policy.New(c.policyConfig())
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var errs []error
	code := map[string]bool{}
	for _, t := range tools {
		code[t.tool.Name] = true
		if _, ok := c.Tools[t.tool.Name]; !ok {
			errs = append(errs, fmt.Errorf("tool %q is implemented but missing from the tools section", t.tool.Name))
			continue
		}
		if t.tool.Annotations == nil {
			// No class in code to check read_only against: never defaulted.
			errs = append(errs, fmt.Errorf("tool %q declares no read/write class in code: set its Annotations' ReadOnlyHint (true for a read)", t.tool.Name))
			continue
		}
		ro := t.tool.Annotations.ReadOnlyHint
		if err := pol.CheckTool(t.tool.Name, &ro); err != nil {
			errs = append(errs, fmt.Errorf("tool %q: code declares read_only: %v, configuration disagrees (%v)", t.tool.Name, ro, err))
		}
	}
	for _, n := range c.toolNames() {
		if !code[n] {
			errs = append(errs, fmt.Errorf("tool %q is configured but has no implementation", n))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: registry check failed: %w", name, err)
	}
	return nil
}
