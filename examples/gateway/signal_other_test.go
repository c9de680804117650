//go:build !unix

package main

import (
	"os"
	"syscall"
)

// signalSelf sends sig to this process where the system can (Windows
// cannot: the tests that stop a gateway by a signal fail there).
func signalSelf(sig syscall.Signal) error {
	p, err := os.FindProcess(os.Getpid())
	if err != nil {
		return err
	}
	return p.Signal(sig)
}
