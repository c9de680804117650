package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAndWrite(t *testing.T) {
	in := `goos: linux
BenchmarkGateway/clients=32-2   	   10000	      3988 direct_ops/s	         0.9121 ratio	         0 ns/op
some log line
BenchmarkGateway/clients=32-2   	   10000	      3991 direct_ops/s	         0.9134 ratio	         0 ns/op
BenchmarkGateway/clients=32-2   	   10000	      4039 direct_ops/s	         0.8858 ratio	         0 ns/op
BenchmarkGateway/clients=32-2   	   10000	      3949 direct_ops/s	         0.9247 ratio	         0 ns/op
BenchmarkOther-2   	   100	      7 x/op
PASS
`
	rows, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 {
		t.Fatalf("parsed %d rows, want 5", len(rows))
	}
	var out strings.Builder
	write(&out, rows)
	want := `BenchmarkGateway/clients=32-2 (n=4)
  direct_ops/s                 3988, 3991, 4039, 3949; median 3990
  ratio                        0.9121, 0.9134, 0.8858, 0.9247; median 0.9127
  ns/op                        0, 0, 0, 0; median 0
BenchmarkOther-2 (n=1)
  x/op                         7; median 7
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestParseRefusesABadMetric(t *testing.T) {
	if _, err := parse(strings.NewReader("BenchmarkX-2 10 fast ops/s\n")); err == nil {
		t.Error("a metric that is not a number parsed")
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		in := append([]float64(nil), tc.in...)
		if got := median(in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !cmp.Equal(in, tc.in) {
			t.Errorf("median changed its input: %v", in)
		}
	}
}
