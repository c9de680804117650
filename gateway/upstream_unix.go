//go:build unix

package gateway

import (
	"crypto/tls"
	"net"
	"syscall"
)

// idlePeek tells whether an idle connection is still open with nothing to
// read: a peer that closed it (or wrote to it unasked) makes it unusable.
// One non-blocking peek, no wait, no allocation: the connection's
// syscall.RawConn and the peek function are made once, when it is dialled.
type idlePeek struct {
	rc     syscall.RawConn // nil: cannot peek, assumed usable
	broken bool            // its RawConn could not be had: never usable
	fn     func(fd uintptr) bool
	ok     bool
	buf    [1]byte
}

func (p *idlePeek) init(nc net.Conn) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		p.broken = true
		return
	}
	p.rc = rc
	p.fn = p.peekFD
}

func (p *idlePeek) peekFD(fd uintptr) bool {
	_, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	p.ok = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
	return true
}

// usable peeks at the connection; only the goroutine that took it from
// the pool calls it.
func (p *idlePeek) usable() bool {
	if p.broken {
		return false
	}
	if p.rc == nil {
		return true
	}
	p.ok = false
	err := p.rc.Read(p.fn)
	return err == nil && p.ok
}
