package loopback

import "testing"

// TestListenAddr: an empty host is 127.0.0.1; the host is loopback as
// IsHost tells (localhost in any ASCII case, 127/8, ::1 and its
// IPv4-mapped form); a malformed value or port is an error that does not
// quote the value.
func TestListenAddr(t *testing.T) {
	for _, tc := range []struct {
		addr, want string
		local      bool
		err        string
	}{
		{":8080", "127.0.0.1:8080", true, ""},
		{"127.0.0.2:0", "127.0.0.2:0", true, ""},
		{"LocalHost:80", "LocalHost:80", true, ""},
		{"[::1]:65535", "[::1]:65535", true, ""},
		{"[::ffff:127.0.0.1]:1", "[::ffff:127.0.0.1]:1", true, ""},
		{"0.0.0.0:8080", "0.0.0.0:8080", false, ""},
		{"example.com:443", "example.com:443", false, ""},
		{"localhost.:80", "localhost.:80", false, ""},
		{"8080", "", false, "missing port in address"},
		{"https://u:pw@h:1/x", "", false, "too many colons in address"},
		{"h:http", "", false, "the port must be a number from 0 to 65535"},
		{"h:65536", "", false, "the port must be a number from 0 to 65535"},
	} {
		got, local, err := ListenAddr(tc.addr)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ListenAddr(%q) error = %v, want %q", tc.addr, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || local != tc.local {
			t.Errorf("ListenAddr(%q) = %q, %v, %v; want %q, %v", tc.addr, got, local, err, tc.want, tc.local)
		}
	}
}
