//go:build !unix

package audit_test

import "errors"

// mkfifo fails: named pipes at a file path are made on unix systems only.
func mkfifo(path string) error { return errors.ErrUnsupported }
