//go:build unix

package testsvc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Postgres is a throwaway PostgreSQL server started by [StartPostgres].
type Postgres struct {
	// DSN connects to the database "postgres" as the superuser "postgres"
	// over TCP on 127.0.0.1 (a URL accepted by pgx).
	DSN  string
	Port int
}

// postgresBin finds a PostgreSQL program on $PATH or under /usr/lib/postgresql.
func postgresBin(name string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], true
	}
	return "", false
}

// StartPostgres starts a PostgreSQL server in a temporary directory,
// listening on a free port on 127.0.0.1 only, with trust authentication, and
// stops it when the test ends. It skips the test, naming the Debian package
// "postgresql", when initdb or postgres is not installed. When running as
// root it runs the server as the "postgres" OS user, which PostgreSQL
// requires.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	initdb, ok1 := postgresBin("initdb")
	server, ok2 := postgresBin("postgres")
	if !ok1 || !ok2 {
		Missing(t, "PostgreSQL binaries initdb/postgres not found: install the Debian package postgresql")
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			Missing(t, "running as root and no postgres OS user to run PostgreSQL as: install the Debian package postgresql")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// t.TempDir is under a root-only directory; use a directory the server user can reach.
	dir, err := os.MkdirTemp("", "mcpguard-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return cmd
	}
	var out bytes.Buffer
	cmd := run(initdb, "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--no-instructions")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out.String())
	}
	port := pgFreePort(t)
	logf := filepath.Join(dir, "postgres.log")
	lf, err := os.Create(logf)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if cred != nil {
		os.Chown(logf, int(cred.Uid), int(cred.Gid))
	}
	srv := run(server, "-D", data, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", dir,
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=50")
	srv.Stdout, srv.Stderr = lf, lf
	if err := srv.Start(); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	exited := make(chan struct{})
	go func() { srv.Wait(); close(exited) }()
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if pgReady(dir, port) {
			break
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logf)
			t.Fatalf("postgres exited during start:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf)
			t.Fatalf("postgres did not become ready:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pg := &Postgres{
		DSN:  fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		Port: port,
	}
	for {
		err := pgPing(port)
		if err == nil {
			return pg
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf)
			t.Fatalf("postgres does not answer: %v\n%s", err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pgPing opens a protocol 3.0 session as user postgres (trust authentication)
// and reports nil once the server answers AuthenticationOk, that is, once it
// accepts queries rather than "the database system is starting up".
func pgPing(port int) error {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	body := binary.BigEndian.AppendUint32(nil, 3<<16)
	for _, kv := range []string{"user", "postgres", "database", "postgres"} {
		body = append(append(body, kv...), 0)
	}
	body = append(body, 0)
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(body)+4))
	if _, err := c.Write(append(msg, body...)); err != nil {
		return err
	}
	var hdr [9]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	if hdr[0] == 'R' && binary.BigEndian.Uint32(hdr[5:]) == 0 {
		c.Write([]byte{'X', 0, 0, 0, 4}) // Terminate
		return nil
	}
	return errors.New("server not ready (message " + strconv.Quote(string(hdr[:1])) + ")")
}

// pgReady reports whether the server has created its socket lock file and
// accepts TCP connections.
func pgReady(dir string, port int) bool {
	if _, err := os.Stat(filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(port))); err != nil {
		return false
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func pgFreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
