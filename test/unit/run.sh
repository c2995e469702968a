#!/usr/bin/env bash
# Runs the unit-test binary from the repository root and ends with "N passed, N failed, N skipped".
set -uo pipefail
bin=${1:?usage: run.sh UNIT_TEST_BINARY}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1

log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$bin" --gtest_brief=1 --gtest_color=no 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

count() { sed -n "s/^\[  $1 *\] \([0-9]*\) tests\{0,1\}.*/\1/p" "$log" | tail -n1; }
passed=$(count PASSED)
failed=$(count FAILED)
skipped=$(count SKIPPED)
if [ -z "$passed$failed" ]; then
	echo "unit tests did not finish (exit status $status)"
	passed=0 failed=1
fi
echo "${passed:-0} passed, ${failed:-0} failed, ${skipped:-0} skipped"
[ "$status" -eq 0 ]
