package policy

import (
	"strings"

	"github.com/mcpguard/mcpguard/internal/jsonnum"
)

// aboveMax reports whether the argument field of args is larger than max
// by its exact decimal value (see jsonnum.Above), for an [ExactArgs] that
// has the number's text; it decides for a number whose float64 equals max
// or was misread (see jsonnum.Float). Without the text, it is false: the
// float64 is taken as exact.
func aboveMax(args Args, field string, max float64) bool {
	a, ok := args.(ExactArgs)
	if !ok {
		return false
	}
	n, ok := a.NumberText(field)
	return ok && jsonnum.Above(n, max)
}

// belowMin reports whether the argument field of args is smaller than min
// by its exact decimal value, as aboveMax does for a max: its negation is
// above -min. Text that is not a JSON number counts as below ("--5", whose
// negation "-5" is one, included). Without the text, it is false.
func belowMin(args Args, field string, min float64) bool {
	a, ok := args.(ExactArgs)
	if !ok {
		return false
	}
	n, ok := a.NumberText(field)
	return ok && (strings.HasPrefix(n, "--") || jsonnum.Above(negated(n), -min))
}

// negated returns the JSON number text n with its sign changed.
func negated(n string) string {
	if m, ok := strings.CutPrefix(n, "-"); ok {
		return m
	}
	return "-" + n
}
