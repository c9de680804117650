package fastschema

import (
	"testing"
)

var formatNames = []string{"date", "time", "date-time", "email", "uuid", "ipv4", "ipv6", "hostname"}

// formatProbes are edge cases for every format.
var formatProbes = []string{
	"", "x", "2024-02-29", "2023-02-29", "2000-02-29", "1900-02-29", "0000-02-29", "2024-04-31", "2024-12-31", "2024-00-10",
	"2024-01-00", "2024-1-01", "2024-01-1", "+024-01-01", "2024-01-01 ", "２０２４-01-01", "2024/01/01", "9999-12-31",
	"10:00:00Z", "10:00:00z", "23:59:60Z", "23:59:60+00:00", "00:59:60+01:00", "22:59:60-01:00", "12:00:00.123456Z",
	"12:00:00.Z", "12:00:00+0100", "12:00:00+01:00", "12:00:00+24:00", "12:00:00+23:60", "-0:00:00Z", "+1:+2:+3Z",
	"00:00:00-00:00", "24:00:00Z", "12:60:00Z", "12:00:61Z", "12:00:00", "1:00:00Z", "12:00:00+-1:00", "12:00:00+01:-0",
	"12:00:00+0:::0", "12:00:00+01:0x", "12::0:00Z", "1:::00:00Z",
	"2024-01-01T10:00:00Z", "2024-01-01t10:00:00z", "2024-01-01 10:00:00Z", "2023-02-29T10:00:00Z", "2024-01-01T23:59:60Z",
	"2024-01-01T10:00:00.5+05:30", "2024-01-01T10:00:00",
	"a@example.com", "a.b@example.com", ".a@example.com", "a.@example.com", "a..b@example.com", `"a b"@example.com`,
	`"a\"b"@example.com`, `""@example.com`, `"@example.com`, "a@[1.2.3.4]", "a@[IPv6:::1]", "a@[IPv6:1.2.3.4]", "a@[]",
	"a@-x.com", "a@x", "@x", "a@", "a@@b", "a@b@c.com", "é@x.com", "a@é.com", "a!#$%&'*+-/=?^_`{|}~@x.com",
	"123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "123e4567-e89b-12d3-a456-42661417400g",
	"123e4567e89b-12d3-a456-426614174000-", "123e4567-e89b-12d3-a456-4266141740000", "-123e4567-e89b-12d3-a456-42661417400",
	"1.2.3.4", "255.255.255.255", "256.1.1.1", "01.2.3.4", "0.0.0.0", "+1.2.3.4", "-0.1.2.3", "-1.2.3.4", "1.2.3", "1.2.3.4.5",
	"1..2.3", "1.2.3.4.", "１.2.3.4", "99999999999999999999.1.1.1", "-00.1.1.1",
	"::1", "::", "1::", "fe80::1%eth0", "fe80::1%", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", ":::", "1.2.3.4",
	"[::1]", "::FFFF:1.2.3.4", "0:0:0:0:0:0:0:0", "12345::1", "g::1",
	"example.com", "example.com.", "a", "a..b", "-a.com", "a-.com", "a_b.com", "xn--bcher-kva.example", ".", "..",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com",
	"a\xffb", "\x00", "10:00:00\xffZ",
}

// v6Formats returns v6's own format functions, as a compiled schema
// exposes them.
func v6Formats(t testing.TB) map[string]func(any) error {
	t.Helper()
	m := map[string]func(any) error{}
	for _, name := range formatNames {
		sch, err := CompileReference(map[string]any{"format": name})
		if err != nil || sch.Format == nil {
			t.Fatalf("v6 format %s: %v", name, err)
		}
		m[name] = sch.Format.Validate
	}
	return m
}

func TestFormatsMatchV6(t *testing.T) {
	checks := v6Formats(t)
	for _, name := range formatNames {
		t.Run(name, func(t *testing.T) {
			valid := 0
			for _, s := range formatProbes {
				want := checks[name](s) == nil
				if got := builtinFormat(name)([]byte(s)); got != want {
					t.Errorf("%s(%q) = %v, v6 says %v", name, s, got, want)
				}
				if want {
					valid++
				}
			}
			if valid == 0 {
				t.Errorf("no probe is a valid %s: the test proves nothing", name)
			}
		})
	}
}

func TestFormatsDoNotAllocate(t *testing.T) {
	for _, tc := range []struct{ name, s string }{
		{"date", "2024-02-29"}, {"time", "12:00:00.5+01:00"}, {"date-time", "2024-01-01T10:00:00Z"},
		{"email", "a@[IPv6:::1]"}, {"uuid", "123e4567-e89b-12d3-a456-426614174000"}, {"ipv4", "1.2.3.4"},
		{"ipv6", "::ffff:1.2.3.4"}, {"hostname", "example.com"},
	} {
		fn, b := builtinFormat(tc.name), []byte(tc.s)
		if !fn(b) {
			t.Fatalf("%s(%q) = false", tc.name, tc.s)
		}
		if n := testing.AllocsPerRun(100, func() { fn(b) }); n != 0 {
			t.Errorf("%s allocates %v times", tc.name, n)
		}
	}
}
