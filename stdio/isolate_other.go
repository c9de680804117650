//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package stdio

import (
	"errors"
	"os"
)

// isolate is the fallback without dup2: the channel keeps the original files
// and, for the process's own streams, the os variables are swapped, which
// covers Go code only.
func isolate(stdin, stdout, stderr, null *os.File, std bool) (in, out *os.File, err error) {
	if !std {
		return nil, nil, errors.New("descriptor redirection is not supported on this platform")
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, nil, err
	}
	os.Stdout = stderr
	os.Stdin = devnull
	return stdin, stdout, nil
}

// wouldBlock reports whether err is a read's or a write's EAGAIN; the
// fallback does not wait out any error (Windows has none such).
func wouldBlock(error) bool { return false }
