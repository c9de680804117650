package stdio

import (
	"os"
	"syscall"
)

// dup2 makes newfd a copy of oldfd (Dup3: linux/arm64 has no dup2).
func dup2(oldfd, newfd int) error {
	if oldfd == newfd {
		return nil
	}
	return os.NewSyscallError("dup3", syscall.Dup3(oldfd, newfd, 0))
}
