package cliarg

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ReadFile reads the file at path, named by the flag name (such as
// "--jwt-jwks"), at most limit bytes: a larger one (a wrong path, /dev/zero)
// is refused, not read whole into memory. Its errors name the flag, and
// show path as it is unless it may be a secret put where a file's path
// belongs (see shownPath): a key file's contents given by mistake, as with
// --upstream-key "$(cat key.pem)", are not echoed.
func ReadFile(name, path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(name, path, err)
	}
	defer f.Close()
	// One byte past limit shows a larger file (limit+1 cannot overflow).
	limit = min(max(limit, 0), math.MaxInt64-1)
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fileError(name, path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s %s: the file is over %s, the most it may hold", name, shownPath(path), size(limit))
	}
	return data, nil
}

// fileError is err, an error of opening or reading the file at path, with
// the flag name before it and path in it shown as shownPath shows it.
func fileError(name, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		err = &fs.PathError{Op: pe.Op, Path: shownPath(path), Err: pe.Err}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// shownPath is path, a file flag's value, for an error: as it is; quoted
// (strconv.Quote) when it has a character that does not print, so that none
// reaches a terminal; or named as Shown names a value it hides when it may
// be a secret put where the path belongs: when it has a control character
// (a line break: a key file's contents), a PEM armor's "-----", or,
// without a '/', the form of a secret given bare (a JWT, user:password, a
// token: see looksLikeSecret). A path with a directory (a temporary one
// such as /tmp/TestKeys2718281828/001) is shown even when a name in it
// looks like a key.
func shownPath(path string) string {
	switch {
	case strings.ContainsFunc(path, unicode.IsControl),
		strings.Contains(path, "-----"),
		!strings.Contains(path, "/") && looksLikeSecret(path):
		return hidden
	case !utf8.ValidString(path) || strings.ContainsFunc(path, func(r rune) bool { return !strconv.IsPrint(r) }):
		return strconv.Quote(path)
	}
	return path
}

// size writes n bytes in MiB when it is a whole number of them.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
