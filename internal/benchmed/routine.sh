#!/bin/bash
# routine.sh OUTDIR
#
# The gateway's benchmark routine of BENCHMARKS.md (the thirty-fourth
# session's commands, then the floor): builds the gateway's test binary,
# runs BenchmarkGateway at 32 clients six times and at one client five
# times, BenchmarkVersusNginx three times (it needs nginx: Debian's
# nginx-light, stopped; it skips without it) and BenchmarkGatewayFloor six
# times, each run in a process of its own, then prints each metric's
# values and median (benchmed). Run nothing else meanwhile. From the
# module's root:
#
#	internal/benchmed/routine.sh /tmp/bench
set -eu
if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
OUT=$(realpath -m "$1")
mkdir -p "$OUT"
rm -f "$OUT"/c32.txt "$OUT"/c1.txt "$OUT"/nginx.txt "$OUT"/floor.txt
go test -c -o "$OUT/gw.test" ./gateway
command -v nginx > /dev/null || echo "routine.sh: no nginx binary: BenchmarkVersusNginx will skip" >&2
date -u +"start %FT%TZ" > "$OUT/when.txt"
(
	cd gateway
	run() { "$OUT/gw.test" -test.run '^$' -test.bench "$1" -test.benchtime "$2" >> "$OUT/$3" 2>&1; }
	for _ in 1 2 3 4 5 6; do run 'BenchmarkGateway$/clients=32' 10000x c32.txt; done
	for _ in 1 2 3 4 5; do run 'BenchmarkGateway$/clients=1$' 3000x c1.txt; done
	for _ in 1 2 3; do run 'BenchmarkVersusNginx' 12000x nginx.txt; done
	for _ in 1 2 3 4 5 6; do run 'BenchmarkGatewayFloor$' 12000x floor.txt; done
)
date -u +"end %FT%TZ" >> "$OUT/when.txt"
cat "$OUT/when.txt"
go run ./internal/benchmed "$OUT"/c32.txt "$OUT"/c1.txt "$OUT"/nginx.txt "$OUT"/floor.txt
