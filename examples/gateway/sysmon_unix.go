//go:build unix

package main

import (
	"os"
	"strings"
	"syscall"
)

// quietSysmon is the GODEBUG setting that keeps the Go runtime's monitor
// thread (sysmon) out of its deep sleep. By default sysmon sleeps whenever
// every P is idle, which in a proxy is every time it waits for the network,
// and the next system call wakes it (a futex wake of another OS thread), after
// which it polls every 20 µs for a while: several thread wakeups per
// proxied request, which on a small virtual machine cost more than the
// proxying. With schedtrace set sysmon never deep-sleeps and backs off to
// one wakeup every 10 ms. The interval is the largest there is (24.8 days),
// so the scheduler summary line it also enables is printed rarely: the
// runtime counts the interval from its monotonic clock's zero, the host's
// boot on Linux, so on a host up longer than that the line comes once at
// start, then every 24.8 days.
const quietSysmon = "schedtrace=2147483647"

// execQuietSysmon re-executes the binary in place (same process id, same
// arguments) with quietSysmon added to GODEBUG, unless GODEBUG already
// sets schedtrace (schedtrace=0 keeps the runtime's default). It returns
// only when it did not re-execute.
func execQuietSysmon() {
	godebug, set := os.LookupEnv("GODEBUG")
	if strings.Contains(godebug, "schedtrace=") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := os.Environ()
	if set {
		env = slicesDeleteGodebug(env)
		godebug += ","
	}
	env = append(env, "GODEBUG="+godebug+quietSysmon)
	syscall.Exec(exe, os.Args, env) // returns only on failure: run as is
}

func slicesDeleteGodebug(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, "GODEBUG=") {
			out = append(out, e)
		}
	}
	return out
}
