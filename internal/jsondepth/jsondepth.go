// Package jsondepth counts how deep a JSON text nests objects and arrays,
// as the go-sdk v1.8.0 counts it (its internal/json checkMaxDepth), which
// refuses a message nested deeper than 1000 levels.
package jsondepth

// Of returns how deep b, JSON text or not, nests objects and arrays: the
// brackets outside strings (a backslash in a string escapes the byte after
// it), a closing one below the top level not counted.
func Of(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return deepest
}
