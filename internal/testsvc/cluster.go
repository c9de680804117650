//go:build unix

package testsvc

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartRedisCluster starts a one-node Redis Cluster (all 16384 slots on one
// redis-server, on loopback, without persistence), stops it when t ends and
// returns its address. It skips t when no redis-server binary is found, as
// [StartRedis] does, and fails t when the cluster does not come up.
func StartRedisCluster(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, "redis-server not found: install the Debian package redis-server")
	}
	var port int
	for range 20 { // the cluster bus listens on port+10000 too
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if port+10000 > 65535 {
			continue
		}
		if bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000)); err == nil {
			bus.Close()
			break
		}
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--cluster-enabled", "yes", "--cluster-config-file", dir+"/nodes.conf",
		"--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for admin.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("testsvc: cluster node did not answer PING")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		info, _ := admin.ClusterInfo(ctx).Result()
		if strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("testsvc: cluster state not ok after 20s:\n%s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return addr
}
