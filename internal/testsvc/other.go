//go:build !unix

package testsvc

import "testing"

// Redis is a throwaway redis-server; see the unix implementation.
type Redis struct {
	// Addr is the server's address, "127.0.0.1:port".
	Addr string
}

// StartRedis skips t (or fails it under [RequireEnv]): the throwaway
// servers are started on unix systems only.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	Missing(t, "throwaway redis-server is supported on unix systems only")
	return nil
}

// Stop does nothing.
func (r *Redis) Stop() {}

// Pause is not supported here.
func (r *Redis) Pause() error { return nil }

// Resume is not supported here.
func (r *Redis) Resume() error { return nil }

// Protect does nothing.
func (r *Redis) Protect(t testing.TB, password string) {}

// Postgres is a throwaway PostgreSQL server; see the unix implementation.
type Postgres struct {
	DSN  string
	Port int
}

// StartPostgres skips t (or fails it under [RequireEnv]): the throwaway
// servers are started on unix systems only.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	Missing(t, "throwaway PostgreSQL is supported on unix systems only")
	return nil
}

// StartRedisCluster skips t (or fails it under [RequireEnv]): the
// throwaway servers are started on unix systems only.
func StartRedisCluster(t testing.TB) string {
	t.Helper()
	Missing(t, "throwaway redis-server is supported on unix systems only")
	return ""
}
