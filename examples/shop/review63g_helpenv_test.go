package main

import (
	"strings"
	"testing"
)

// TestReview63gHelpHidesGatewayURLFromEnv: --gateway takes its default
// from SHOP_GATEWAY_URL, and the flag package's usage prints a flag's
// default: `shop --help`, and every flag error (an unknown flag, a
// malformed --rate), printed the variable's value whole, user info and
// query included (`(default "http://svc:s3cret@...")`), on the terminal or
// into a log. The README promises that a --gateway value with user info,
// a query or a fragment "is not printed" (the usage error for it names
// the flag alone); the same value from the variable was printed by the
// help the operator runs to see what is wrong.
func TestReview63gHelpHidesGatewayURLFromEnv(t *testing.T) {
	env := []string{"SHOP_GATEWAY_URL=http://svc:s3cret@127.0.0.1:1/api?token=t0ken"}
	for _, args := range [][]string{
		{"--help"},
		{"--bogus"},
		{"--rate", "x"},
	} {
		code, out := runBinaryEnv(t, env, args...)
		if code == -1 {
			t.Fatalf("shop %q did not exit", args)
		}
		for _, s := range []string{"s3cret", "t0ken"} {
			if strings.Contains(out, s) {
				t.Errorf("shop %q (exit %d) printed %q from SHOP_GATEWAY_URL:\n%s", args, code, s, out)
				break
			}
		}
	}
}
