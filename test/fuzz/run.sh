#!/usr/bin/env bash
# run.sh SECONDS FUZZER...: runs each libFuzzer harness for SECONDS from its seeds
# (test/fuzz/corpus/<name>/, copied: the checked-in corpus is never written), prints one line per
# harness with its executions, and ends with "N passed, N failed". A harness fails on any finding
# (crash, sanitizer report, leak, timeout, out-of-memory); what reproduces it is in
# build/fuzz/findings/.
set -uo pipefail
seconds=${1:?usage: run.sh SECONDS FUZZER...}
shift
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
work=build/fuzz/work
findings=build/fuzz/findings
mkdir -p "$work" "$findings"

# fuzz_one <binary>: one harness; its result lines go to $work/<name>.result, its executions to
# $work/<name>.runs.
fuzz_one() {
	local bin=$1 name corpus log status runs
	name=$(basename "$bin")
	name=${name#fuzz_}
	corpus=$work/$name
	rm -rf "$corpus"
	mkdir -p "$corpus"
	cp test/fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null
	log=$work/$name.log
	# Sizes from outside must never drive an allocation beyond a bound: 256 MiB per malloc and
	# 1 GiB in all are far above any bound the plugin documents.
	"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=256 \
		-print_final_stats=1 -artifact_prefix="$findings/$name-" "$corpus" >"$log" 2>&1
	status=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	echo "${runs:-0}" >"$work/$name.runs"
	if [ "$status" -eq 0 ] && [ -n "$runs" ]; then
		echo "ok fuzz $name: $runs executions in $seconds s, $(find "$corpus" -type f | wc -l) inputs in the corpus"
	else
		echo "not ok fuzz $name: exit status $status after ${runs:-?} executions; see $log"
		grep -E 'ERROR|SUMMARY|runtime error|==[0-9]+==' "$log" | head -n 8 | sed 's/^/#   /'
	fi >"$work/$name.result"
}

# As many harnesses at a time as there are cores: each is one single-threaded process.
jobs=$(nproc)
for bin in "$@"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	fuzz_one "$bin" &
done
wait

passed=0 failed=0 total=0
for bin in "$@"; do
	name=$(basename "$bin")
	name=${name#fuzz_}
	cat "$work/$name.result"
	total=$((total + $(cat "$work/$name.runs")))
	if grep -q '^ok ' "$work/$name.result"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
done
echo "# fuzz: $total executions in all"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
