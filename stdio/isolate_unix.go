//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package stdio

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// isolate duplicates stdin and stdout for the channel, then points stdout's
// descriptor at stderr and stdin's at null. When stdout or stderr is
// descriptor 1 or 2, it also asks for SIGPIPE, so that a write to a broken
// pipe on descriptor 1 or 2 fails with EPIPE instead of killing the
// process (see [os/signal]): a client that goes away closes the server's
// stderr with its stdout, and the next log line or stray print would
// otherwise end the server before its shutdown. Other files leave
// descriptors 1 and 2 alone, and the process's SIGPIPE as it was. The
// channel's own writes already fail with EPIPE, on a descriptor above 2.
// Child processes start with SIGPIPE at its default, as exec resets a
// caught signal.
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
	if err := redirect(int(stderr.Fd()), int(stdout.Fd())); err != nil {
		syscall.Close(inFD)
		syscall.Close(outFD)
		return nil, nil, err
	}
	if err := redirect(int(null.Fd()), int(stdin.Fd())); err != nil {
		// Undo the stdout redirection: leave everything as it was.
		_ = redirect(outFD, int(stdout.Fd()))
		syscall.Close(inFD)
		syscall.Close(outFD)
		return nil, nil, err
	}
	if isStd(stdout) || isStd(stderr) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) // never read: only EPIPE matters
	}
	return os.NewFile(uintptr(inFD), "jsonrpc-stdin"), os.NewFile(uintptr(outFD), "jsonrpc-stdout"), nil
}

// isStd reports whether f is descriptor 1 or 2, whose writes to a broken
// pipe kill a Go program unless it asks for SIGPIPE.
func isStd(f *os.File) bool { return f.Fd() == 1 || f.Fd() == 2 }

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

// redirect makes fd a copy of target. dup2 clears close-on-exec on fd; a
// descriptor above 2 (a file given in Options, which Go opened
// close-on-exec) gets it back, so that child processes do not inherit it,
// while 0, 1 and 2 are theirs to inherit.
func redirect(target, fd int) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := dup2(target, fd); err != nil {
		return err
	}
	if fd > 2 {
		syscall.CloseOnExec(fd)
	}
	return nil
}

// wouldBlock reports whether err is a read's or a write's EAGAIN: the
// descriptor was made non-blocking (by another process sharing it) and is
// empty, or full.
func wouldBlock(err error) bool { return errors.Is(err, syscall.EAGAIN) }
