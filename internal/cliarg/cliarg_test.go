package cliarg

import "testing"

func TestShown(t *testing.T) {
	hidden := []string{
		"http://svc:s3cret@127.0.0.1:9000/mcp",
		"redis://default@127.0.0.1:6379",
		"rediss://127.0.0.1:6380",
		"postgres://u:s3cret@127.0.0.1/db",
		"postgres://127.0.0.1/db?password=s3cret",
		"u:pw@h:1",
		"h:1?PASSWORD=x",
		"MCP_GATEWAY_SIGN_KEY=c2VjcmV0",
		"SHOP_MCP_REDIS_PASSWORD=s3cret",
		"--Token=abc",
		"Authorization: Bearer abc",
		"client_secret=abc",
	}
	for _, v := range hidden {
		if got := Shown(v); got != "(a value that may hold a secret, not shown)" {
			t.Errorf("Shown(%q) = %q, want it not shown", v, got)
		}
	}
	shown := map[string]string{
		"serve":      `"serve"`,
		"now":        `"now"`,
		"--rate":     `"--rate"`,
		"a\x1b[2Jb":  `"a\x1b[2Jb"`,
		"127.0.0.1:": `"127.0.0.1:"`,
		"":           `""`,
	}
	for v, want := range shown {
		if got := Shown(v); got != want {
			t.Errorf("Shown(%q) = %s, want %s", v, got, want)
		}
	}
	if got, want := List([]string{"stray", "--rate", "x@y"}), `["stray" "--rate" (a value that may hold a secret, not shown)]`; got != want {
		t.Errorf("List = %s, want %s", got, want)
	}
}
