//go:build unix

package testsvc

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Redis is a running throwaway redis-server started by [StartRedis].
type Redis struct {
	// Addr is the server's address, "127.0.0.1:port".
	Addr string

	cmd  *exec.Cmd
	once sync.Once
}

// StartRedis starts a redis-server on a free loopback port, without
// persistence, and stops it when t ends. It skips t when no redis-server
// binary is found (Debian package redis-server) and fails t when the server
// does not come up.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/redis-server"); serr != nil {
			Missing(t, "redis-server not found: install the Debian package redis-server")
		}
		bin = "/usr/bin/redis-server"
	}
	var lastErr error
	for range 5 {
		r, err := startRedis(t, bin)
		if err == nil {
			t.Cleanup(r.Stop)
			return r
		}
		lastErr = err
	}
	t.Fatalf("testsvc: redis-server did not start: %v", lastErr)
	return nil
}

func startRedis(t testing.TB, bin string) (*Redis, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--protected-mode", "yes", "--loglevel", "warning")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(r.Addr); err == nil {
			go func() { <-exited }() // reap the process once it ends
			return r, nil
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("redis-server exited (%v): %s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return nil, errors.New("redis-server did not answer PING within 10s")
		}
	}
}

// Stop stops the server; later calls do nothing. Calls to the server fail
// quickly afterwards (connection refused).
func (r *Redis) Stop() {
	r.once.Do(func() {
		_ = r.cmd.Process.Signal(syscall.SIGCONT)
		_ = r.cmd.Process.Kill()
		for range 500 {
			if ping(r.Addr) != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// Pause freezes the server (SIGSTOP): it keeps its port open but answers
// nothing, like a hung server, until [Redis.Resume].
func (r *Redis) Pause() error { return r.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (r *Redis) Resume() error { return r.cmd.Process.Signal(syscall.SIGCONT) }

// Protect gives the server's default user the password password and adds
// the ACL user "app" with the same password and every right, as a Redis
// with AUTH is run in production. (Stop then finds the server gone at the
// first PING, which it refuses without the password: it was killed
// already.)
func (r *Redis) Protect(t testing.TB, password string) {
	t.Helper()
	for _, cmd := range [][]string{
		{"ACL", "SETUSER", "app", "on", ">" + password, "~*", "&*", "+@all"},
		{"CONFIG", "SET", "requirepass", password},
	} {
		if err := command(r.Addr, cmd...); err != nil {
			t.Fatalf("testsvc: %s %s: %v", cmd[0], cmd[1], err)
		}
	}
}

// command sends one command, args, in RESP and expects +OK.
func command(addr string, args ...string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+OK" {
		return fmt.Errorf("answered %q", strings.TrimSpace(line))
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ping sends PING in the inline protocol and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
