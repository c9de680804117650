//go:build unix

package main

import (
	"os"
	"syscall"
)

// signalSelf sends sig to this process.
func signalSelf(sig syscall.Signal) error { return syscall.Kill(os.Getpid(), sig) }
