//go:build !unix

package gateway

import "net"

// idleConnUsable cannot peek at a connection on this system: an idle
// connection is assumed usable, and a replayable request that finds it
// closed is sent again on a new one.
func idleConnUsable(net.Conn) bool { return true }
