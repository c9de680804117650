// Command benchmed prints, for each benchmark in go test -bench output, the
// values of each of its metrics over the runs and their median: the
// gateway's benchmarks report ratios, and these machines are noisy, so
// BENCHMARKS.md records medians of several runs (see routine.sh).
//
//	go run ./internal/benchmed out/*.txt
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchmed FILE...")
		os.Exit(2)
	}
	var all []row
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchmed:", err)
			os.Exit(1)
		}
		rows, err := parse(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchmed: %s: %v\n", name, err)
			os.Exit(1)
		}
		all = append(all, rows...)
	}
	if len(all) == 0 {
		fmt.Fprintln(os.Stderr, "benchmed: no benchmark lines")
		os.Exit(1)
	}
	write(os.Stdout, all)
}

// A row is one benchmark line: its name and its metrics, in their order.
type row struct {
	name   string
	units  []string
	values []float64
}

// parse reads the benchmark lines of r ("BenchmarkX-2  N  v1 unit1  v2
// unit2 ..."), skipping every other line.
func parse(r io.Reader) ([]row, error) {
	var rows []row
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue // a benchmark's own log line
		}
		rw := row{name: f[0]}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: metric %q: %v", f[0], f[i+1], err)
			}
			rw.units = append(rw.units, f[i+1])
			rw.values = append(rw.values, v)
		}
		rows = append(rows, rw)
	}
	return rows, sc.Err()
}

// write prints, for each benchmark in the order first seen, each metric's
// values in the order of the runs and their median.
func write(w io.Writer, rows []row) {
	var names []string
	by := map[string][]row{}
	for _, r := range rows {
		if _, ok := by[r.name]; !ok {
			names = append(names, r.name)
		}
		by[r.name] = append(by[r.name], r)
	}
	for _, name := range names {
		runs := by[name]
		fmt.Fprintf(w, "%s (n=%d)\n", name, len(runs))
		var units []string
		vals := map[string][]float64{}
		for _, r := range runs {
			for i, u := range r.units {
				if _, ok := vals[u]; !ok {
					units = append(units, u)
				}
				vals[u] = append(vals[u], r.values[i])
			}
		}
		for _, u := range units {
			v := vals[u]
			s := make([]string, len(v))
			for i, x := range v {
				s[i] = strconv.FormatFloat(x, 'g', 4, 64)
			}
			fmt.Fprintf(w, "  %-28s %s; median %s\n", u, strings.Join(s, ", "), strconv.FormatFloat(median(v), 'g', 4, 64))
		}
	}
}

// median returns the median of v (the mean of the middle two for an even
// count); v is not changed.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
