//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// restart stops the server as "pg_ctl stop -m immediate" does (SIGQUIT to
// the postmaster: no checkpoint, every backend killed), waits down, then
// starts the same command line again (pg_ctl restart reads it from
// postmaster.opts) and waits until it accepts queries.
func (p *pgFailServer) restart(t *testing.T, down time.Duration) {
	t.Helper()
	var dataDir string
	if err := p.admin.QueryRow(`SHOW data_directory`).Scan(&dataDir); err != nil {
		t.Error(err)
		return
	}
	pidText, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		t.Error(err)
		return
	}
	pid, err := strconv.Atoi(strings.SplitN(string(pidText), "\n", 2)[0])
	if err != nil {
		t.Error(err)
		return
	}
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
		t.Error(err)
		return
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(down)
	bin, err := findPgCtl()
	if err != nil {
		t.Error(err)
		return
	}
	cmd := exec.Command(bin, "restart", "-D", dataDir, "-m", "immediate", "-w", "-l", filepath.Join(filepath.Dir(dataDir), "restarted.log"))
	cmd.Dir = filepath.Dir(dataDir)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Error("no postgres OS user")
			return
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("pg_ctl restart: %v\n%s", err, out)
		return
	}
	t.Cleanup(func() {
		stop := exec.Command(bin, "stop", "-D", dataDir, "-m", "fast")
		stop.SysProcAttr = cmd.SysProcAttr
		stop.Run()
	})
}

func findPgCtl() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return p, nil
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(m) == 0 {
		return "", fmt.Errorf("pg_ctl not found: install the Debian package postgresql")
	}
	return m[len(m)-1], nil
}
