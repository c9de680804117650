//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package stdio

import (
	"os"
	"syscall"
)

// dup2 makes newfd a copy of oldfd.
func dup2(oldfd, newfd int) error {
	return os.NewSyscallError("dup2", syscall.Dup2(oldfd, newfd))
}
