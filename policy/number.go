package policy

import "github.com/mcpguard/mcpguard/internal/jsonnum"

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
