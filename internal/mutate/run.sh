#!/bin/bash
# run.sh FILE FUNCREGEXP PKG OUTDIR [TESTRUN_REGEXP] [TIMEOUT]
#
# A mutation sweep: writes every mutant of the functions of FILE (a path
# in this module) that match FUNCREGEXP, runs PKG's tests (those matching
# TESTRUN_REGEXP, default all) against each through `go test -overlay`,
# which leaves the working tree alone, and writes OUTDIR/results.tsv: id,
# line:col, description, verdict (killed, SURVIVED, timeout, nobuild).
# The mutants and the test logs are in OUTDIR/m. From the module's root:
#
#	internal/mutate/run.sh policy/policy.go . ./policy /tmp/mut/policy
set -u
if [ $# -lt 4 ]; then
	echo "usage: $0 FILE FUNCREGEXP PKG OUTDIR [TESTRUN_REGEXP] [TIMEOUT]" >&2
	exit 2
fi
FILE=$(realpath "$1"); FN=$2; PKG=$3; OUT=$4; TR=${5:-.}; TO=${6:-300s}
mkdir -p "$OUT/m"
go run ./internal/mutate -file "$FILE" -func "$FN" -out "$OUT/m" > "$OUT/list.tsv" || exit 2
: > "$OUT/results.tsv"
while IFS=$'\t' read -r id pos desc; do
	printf '{"Replace":{"%s":"%s"}}' "$FILE" "$OUT/m/$id.go" > "$OUT/m/$id.json"
	go test -vet=off -overlay "$OUT/m/$id.json" -count=1 -failfast -timeout "$TO" -run "$TR" "$PKG" > "$OUT/m/$id.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then v=SURVIVED
	elif grep -q "panic: test timed out" "$OUT/m/$id.log"; then v=timeout
	elif grep -q "build failed\|setup failed" "$OUT/m/$id.log"; then v=nobuild
	else v=killed; fi
	printf '%s\t%s\t%s\t%s\n' "$id" "$pos" "$desc" "$v" >> "$OUT/results.tsv"
done < "$OUT/list.tsv"
awk -F'\t' '{print $4}' "$OUT/results.tsv" | sort | uniq -c
