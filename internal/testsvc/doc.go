// Package testsvc starts throwaway real servers for tests: a redis-server
// ([StartRedis]) and, alongside it, other services the tests of mcpguard
// need. Each server listens on 127.0.0.1 only, keeps its files in the test's
// temporary directory, and is stopped when the test ends. When a server's
// binary is missing, the test is skipped with a message naming the Debian
// package to install. It also holds what tests share around those servers
// and timing: proxies that cut a connection at a chosen moment ([CutProxy])
// and [WorkTime], which measures a call's work rather than its wall time.
package testsvc
