//go:build unix

package audit

import (
	"os"
	"syscall"
)

// unlinked reports whether f, a regular file, has no name left: removed,
// or replaced by a file renamed over its path.
func unlinked(f *os.File) bool {
	st, err := f.Stat()
	if err != nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Nlink == 0
}
