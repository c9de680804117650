//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package stdio

import (
	"errors"
	"os"
	"syscall"
)

// isolate duplicates stdin and stdout for the channel, then points stdout's
// descriptor at stderr and stdin's at null.
func isolate(stdin, stdout, stderr, null *os.File, _ bool) (in, out *os.File, err error) {
	// Pointing stdin's descriptor at null would take it from the stream
	// that shares it.
	if stdin.Fd() == stdout.Fd() {
		return nil, nil, errors.New("standard input and standard output are the same descriptor; give each its own")
	}
	if stdin.Fd() == stderr.Fd() {
		return nil, nil, errors.New("standard input and standard error are the same descriptor; give each its own")
	}
	inFD, err := dupCloexec(int(stdin.Fd()))
	if err != nil {
		return nil, nil, err
	}
	outFD, err := dupCloexec(int(stdout.Fd()))
	if err != nil {
		syscall.Close(inFD)
		return nil, nil, err
	}
	if err := dup2(int(stderr.Fd()), int(stdout.Fd())); err != nil {
		syscall.Close(inFD)
		syscall.Close(outFD)
		return nil, nil, err
	}
	if err := dup2(int(null.Fd()), int(stdin.Fd())); err != nil {
		// Undo the stdout redirection: leave everything as it was.
		_ = dup2(outFD, int(stdout.Fd()))
		syscall.Close(inFD)
		syscall.Close(outFD)
		return nil, nil, err
	}
	return os.NewFile(uintptr(inFD), "jsonrpc-stdin"), os.NewFile(uintptr(outFD), "jsonrpc-stdout"), nil
}

// dupCloexec duplicates fd; the copy is not inherited by child processes.
func dupCloexec(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return -1, os.NewSyscallError("dup", err)
	}
	syscall.CloseOnExec(nfd)
	return nfd, nil
}
