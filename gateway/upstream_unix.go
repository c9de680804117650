//go:build unix

package gateway

import (
	"crypto/tls"
	"net"
	"syscall"
)

// idleConnUsable reports whether an idle connection is still open with
// nothing to read: a peer that closed it (or wrote to it unasked) makes it
// unusable. One non-blocking peek, no wait.
func idleConnUsable(nc net.Conn) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	usable := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		usable = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && usable
}
