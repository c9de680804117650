package limiter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Kind is what a [Limit] counts.
type Kind uint8

// The kinds of limit. The zero Kind is not a valid kind; it is the Kind of
// the zero [Limit] reported by an allowed [Decision].
const (
	// Rate counts calls per window: a [Request]'s Calls.
	Rate Kind = iota + 1
	// Spend counts cost units per window: a [Request]'s Cost.
	Spend
	// Concurrency counts calls in flight: every allowed call holds one
	// slot until [Limiter.Release].
	Concurrency
)

// String returns "rate", "spend", "concurrency", or "kind(N)" for an
// invalid value.
func (k Kind) String() string {
	switch k {
	case Rate:
		return "rate"
	case Spend:
		return "spend"
	case Concurrency:
		return "concurrency"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Scope says whose calls a [Limit] pools together.
type Scope uint8

// The scopes of a limit. The zero Scope is not a valid scope.
const (
	// Session gives every session (a [Request]'s Session key) its own budget.
	Session Scope = iota + 1
	// User gives every user (a [Request]'s User) its own budget, shared by
	// all the user's sessions.
	User
	// Global gives all calls one shared budget.
	Global
)

// String returns "session", "user", "global", or "scope(N)" for an invalid
// value.
func (s Scope) String() string {
	switch s {
	case Session:
		return "session"
	case User:
		return "user"
	case Global:
		return "global"
	}
	return "scope(" + strconv.Itoa(int(s)) + ")"
}

// MinWindow is the shortest Window a rate or spend [Limit] may have.
const MinWindow = time.Millisecond

// MaxWindow is the longest Window a rate or spend [Limit] may have: fifty
// years, far within the stores' arithmetic on nanosecond and microsecond
// times.
const MaxWindow = 50 * 365 * 24 * time.Hour

// A Limit is one cap. Several limits of different kinds and scopes apply to
// one call at once; the call is allowed only if every applicable limit
// allows it.
//
// Rate and Spend limits are enforced with GCRA (the generic cell rate
// algorithm, equivalent to a token bucket): a bucket holds at most Max units
// and refills continuously at Max units per Window. A call taking n units is
// allowed when the bucket holds at least n units, and then takes them; a
// call of more than Max units is never allowed, however long it waits. So
// after a quiet period up to Max units pass at once, and over any interval of
// length d at most Max + Max*d/Window units pass; there is no window edge at
// which 2*Max can pass in an instant, as with fixed windows. A call that
// cannot be allowed yet is told exactly how long to wait until enough units
// have refilled. Time resolution is one nanosecond in memory and one microsecond
// on Redis; the time a call takes from a bucket (Window*n/Max) is rounded
// down to it, so a burst of exactly Max units always fits, but never to
// zero: a call with a positive cost takes at least one tick, so a limit
// finer than the resolution (more than Max units per Window/Max of a tick)
// is stricter than configured, never unlimited. Rounding down lets a call
// through up to one tick early, so over a long interval d a steady stream
// of calls may pass more than Max + Max*d/Window units, by less than one
// tick's worth of units per call: relatively, by less than one tick over
// a call's time (Window*n/Max), one in a million for a call taking a
// second of a window on Redis, one in a thousand for a millisecond.
//
// Concurrency limits count calls in flight: at most Max at once.
type Limit struct {
	// Kind is what the limit counts. Required.
	Kind Kind
	// Scope is whose calls share the budget. Required.
	Scope Scope
	// Tool restricts the limit to calls of one tool: of that name, or of
	// any spelling of it that the policy takes for it (policy.NameKey:
	// "SEARCH" and "ſearch" for "search"), all sharing one budget, as a
	// downstream server lenient with the case of names may run the one
	// tool for each. The zero value applies the limit to every tool, with
	// one budget shared by all of them. Tool is a name, not a pattern:
	// [New] refuses one with a "*", which would cap only a tool of that
	// very name, never every tool ("*") or every tool of a prefix
	// ("admin_*").
	Tool string
	// Max is the budget: calls (Rate, at least 1), cost units (Spend,
	// positive), or slots (Concurrency, a whole number from 1 to
	// math.MaxInt32).
	Max float64
	// Window is the time over which Max refills, for Rate and Spend limits
	// (at least [MinWindow], at most [MaxWindow]). It must be zero for
	// Concurrency limits.
	Window time.Duration
}

// String describes the limit, as in "rate 60/1m0s per user" or
// `concurrency 32 global for tool "refund"`.
func (l Limit) String() string {
	var s string
	max := strconv.FormatFloat(l.Max, 'g', -1, 64)
	if l.Kind == Concurrency {
		s = l.Kind.String() + " " + max
	} else {
		s = l.Kind.String() + " " + max + "/" + l.Window.String()
	}
	if l.Scope == Global {
		s += " global"
	} else {
		s += " per " + l.Scope.String()
	}
	if l.Tool != "" {
		s += " for tool " + strconv.Quote(l.Tool)
	}
	return s
}

// ID returns the stable identity of the limit used to name its state in a
// [Store]: kind, scope, window and tool, as in `rate:user:1m0s:""`. The tool
// is quoted, so an ID followed by a separator and a key is unambiguous.
// Changing a limit's Max keeps its ID, and so its state.
func (l Limit) ID() string {
	return l.Kind.String() + ":" + l.Scope.String() + ":" + l.Window.String() + ":" + strconv.Quote(l.Tool)
}

func (l Limit) validate() error {
	switch l.Kind {
	case Rate, Spend, Concurrency:
	default:
		return fmt.Errorf("invalid kind %d", l.Kind)
	}
	switch l.Scope {
	case Session, User, Global:
	default:
		return fmt.Errorf("invalid scope %d", l.Scope)
	}
	if strings.Contains(l.Tool, "*") {
		return fmt.Errorf("tool %q: a limit names one tool exactly, and \"*\" is not a wildcard (a limit without a tool applies to every tool)", l.Tool)
	}
	if math.IsNaN(l.Max) || math.IsInf(l.Max, 0) || l.Max <= 0 {
		return fmt.Errorf("max %v is not a positive finite number", l.Max)
	}
	switch l.Kind {
	case Rate:
		if l.Max < 1 {
			return fmt.Errorf("max %v is less than one call", l.Max)
		}
	case Concurrency:
		if l.Max != math.Trunc(l.Max) {
			return fmt.Errorf("max %v is not a whole number of slots", l.Max)
		}
		if l.Max > math.MaxInt32 {
			return fmt.Errorf("max %v is more than %d slots", l.Max, math.MaxInt32)
		}
		if l.Window != 0 {
			return errors.New("a concurrency limit has no window")
		}
		return nil
	}
	if l.Window < MinWindow {
		return fmt.Errorf("window %v is shorter than %v", l.Window, MinWindow)
	}
	if l.Window > MaxWindow {
		return fmt.Errorf("window %v is longer than %v", l.Window, MaxWindow)
	}
	return nil
}

// CheckCost reports whether cost is a valid cost for a call: a finite number
// at least zero. It returns an error that unwraps to [ErrInvalidCost]
// otherwise.
func CheckCost(cost float64) error {
	if math.IsNaN(cost) || math.IsInf(cost, 0) || cost < 0 {
		return fmt.Errorf("%w: %v is not a finite number at least zero", ErrInvalidCost, cost)
	}
	return nil
}
