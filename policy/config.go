package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/jsonnum"
)

// MaxConfigBytes is the size of the largest rule file [ParseConfig] reads:
// 1 MiB.
const MaxConfigBytes = 1 << 20

// ParseConfig reads a rule file in the JSON format the package doc
// describes (see "Rule files") and returns its [Config], for [New] to check
// as usual. It is strict, since a rule lost to a typing mistake leaves a
// tool under a laxer rule than its author wrote: it refuses a document
// over [MaxConfigBytes], not valid UTF-8, not one JSON object, or with
// anything after it; a member it does not know (encoding/json would drop
// "rolls" or "RoleRules" silently: decode a rule file with ParseConfig,
// not straight into a Config), including one whose name differs from a
// known one only in letter case; a member given twice; a value of another
// JSON type than the member's, null included (leave the member out
// instead); a class other than "read" or "write"; a missing name or class
// of a tool, pattern or roles of a role rule, or field of an argument
// limit, or one with neither min nor max; an empty name, pattern or
// field; a number that is not a finite float64, a negative cost or a
// nonzero one that reads as the float64 0 (1e-400), a max that reads as a
// float64 whose shortest decimal, which calls are compared with, is above
// the number written (9007199254740995 reads as 9007199254740996: the
// limit would allow more than written), or a min whose decimal is below
// it (9007199254740993 reads as 9007199254740992); and a string with a
// \u escape of half a surrogate pair, which encoding/json would read as
// U+FFFD. Its errors begin "policy: config: " and name the member, as in
// "tools[2].rolls: unknown member".
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	if len(data) > MaxConfigBytes {
		return cfg, fmt.Errorf("policy: config: %d bytes, more than the %d allowed", len(data), MaxConfigBytes)
	}
	if err := checkDocument(data); err != nil {
		return cfg, err
	}
	_, err := object(bytes.TrimSpace(data), "", topMembers, func(key, at string, v []byte) error {
		var err error
		switch key {
		case "tools":
			err = array(v, at, func(at string, v []byte) error {
				r, err := toolRule(v, at, toolMembers)
				cfg.Tools = append(cfg.Tools, r)
				return err
			})
		case "role_rules":
			err = array(v, at, func(at string, v []byte) error {
				r, err := roleRule(v, at)
				cfg.RoleRules = append(cfg.RoleRules, r)
				return err
			})
		case "write_allowlist":
			cfg.WriteAllowlist, err = strs(v, at)
		case "default":
			var r ToolRule
			r, err = toolRule(v, at, defaultMembers)
			cfg.Default = &r
		case "show_forbidden":
			cfg.ShowForbidden, err = boolean(v, at)
		}
		return err
	})
	if err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// The members of each object of the format, as errors list them.
const (
	topMembers      = "tools, role_rules, write_allowlist, default, show_forbidden"
	toolMembers     = "name, " + defaultMembers
	defaultMembers  = "class, roles, cost, confirm, arg_limits" // the default rule has no name
	argLimitMembers = "field, min, max, exempt_roles"
	roleRuleMembers = "pattern, roles"
)

// checkDocument refuses data that is not UTF-8 JSON text of one value,
// saying where the syntax breaks.
func checkDocument(data []byte) error {
	switch {
	case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
		return errors.New("policy: config: begins with a byte order mark; save the file as UTF-8 without one")
	case !utf8.Valid(data):
		return errors.New("policy: config: not valid UTF-8")
	case json.Valid(data):
		return nil
	}
	var se *json.SyntaxError
	if err := json.Unmarshal(data, new(any)); errors.As(err, &se) {
		if se.Offset == 0 || int(se.Offset) > len(data) {
			return fmt.Errorf("policy: config: not JSON: %v", se)
		}
		line := 1 + bytes.Count(data[:se.Offset-1], []byte("\n"))
		col := utf8.RuneCount(data[bytes.LastIndexByte(data[:se.Offset-1], '\n')+1 : se.Offset])
		return fmt.Errorf("policy: config: not JSON: line %d, column %d: %v", line, col, se)
	}
	return errors.New("policy: config: not JSON")
}

// toolRule reads a tool rule (or, with defaultMembers, the default rule).
func toolRule(v []byte, at string, members string) (ToolRule, error) {
	var r ToolRule
	seen, err := object(v, at, members, func(key, at string, v []byte) error {
		var err error
		switch key {
		case "name":
			r.Name, err = name(v, at)
		case "class":
			var c string
			if c, err = str(v, at); err == nil {
				switch c {
				case "read":
					r.Class = Read
				case "write":
					r.Class = Write
				default:
					err = fmt.Errorf("policy: config: %s: %s: want \"read\" or \"write\"", at, quoted(c))
				}
			}
		case "roles":
			r.Roles, err = strs(v, at)
		case "cost":
			if r.Cost, err = number(v, at); err == nil && r.Cost < 0 {
				err = fmt.Errorf("policy: config: %s: %.40s: want a finite number, 0 or more", at, v)
			} else if err == nil && r.Cost == 0 && nonzero(v) {
				// 1e-400: a cost its author meant to count, read as none.
				err = fmt.Errorf("policy: config: %s: %.40s reads as the float64 0: the tool would cost nothing; write 0, or a cost a float64 holds", at, v)
			}
		case "confirm":
			r.Confirm, err = boolean(v, at)
		case "arg_limits":
			err = array(v, at, func(at string, v []byte) error {
				l, err := argLimit(v, at)
				r.ArgLimits = append(r.ArgLimits, l)
				return err
			})
		}
		return err
	})
	if err == nil && members == toolMembers {
		err = required(at, seen, "name")
	}
	if err == nil {
		err = required(at, seen, "class")
	}
	return r, err
}

func argLimit(v []byte, at string) (ArgLimit, error) {
	var l ArgLimit
	seen, err := object(v, at, argLimitMembers, func(key, at string, v []byte) error {
		var err error
		switch key {
		case "field":
			l.Field, err = name(v, at)
		case "max":
			if l.Max, err = number(v, at); err == nil && loosens(string(v), l.Max) {
				below := strconv.FormatFloat(math.Nextafter(l.Max, math.Inf(-1)), 'g', -1, 64)
				err = fmt.Errorf("policy: config: %s: %.40s reads as the float64 %v, above it, and a call's number is compared with that; write %s or less", at, v, l.Max, below)
			}
		case "min":
			var m float64
			if m, err = number(v, at); err == nil && jsonnum.Above(string(v), m) {
				// The mirror of loosens: 9007199254740993 reads as
				// 9007199254740992, and the limit would let that through.
				above := strconv.FormatFloat(math.Nextafter(m, math.Inf(1)), 'g', -1, 64)
				err = fmt.Errorf("policy: config: %s: %.40s reads as the float64 %v, below it, and a call's number is compared with that; write %s or more", at, v, m, above)
			}
			l.Min = &m
		case "exempt_roles":
			l.ExemptRoles, err = strs(v, at)
		}
		return err
	})
	if err == nil {
		err = required(at, seen, "field")
	}
	if err == nil && !seen["max"] {
		if !seen["min"] {
			err = fmt.Errorf("policy: config: %s: \"max\" is required, or \"min\", or both", at)
		}
		l.Max = math.Inf(1)
	}
	return l, err
}

func roleRule(v []byte, at string) (RoleRule, error) {
	var r RoleRule
	seen, err := object(v, at, roleRuleMembers, func(key, at string, v []byte) error {
		var err error
		switch key {
		case "pattern":
			r.Pattern, err = name(v, at)
		case "roles":
			r.Roles, err = strs(v, at)
		}
		return err
	})
	if err == nil {
		err = required(at, seen, "pattern", "roles")
	}
	return r, err
}

// nonzero reports whether v, a JSON number's text, has a digit other than
// 0 before its exponent: a value other than zero, however small.
func nonzero(v []byte) bool {
	for _, c := range v {
		switch {
		case c == 'e' || c == 'E':
			return false
		case c >= '1' && c <= '9':
			return true
		}
	}
	return false
}
