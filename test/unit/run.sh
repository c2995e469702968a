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

# gtest's brief mode prints one line per failed or skipped test, "[  FAILED  ] Suite.Name (3 ms)",
# and the number of passed tests in its summary.
passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\.$/\1/p' "$log" | tail -n1)
failed=$(grep -cE '^\[  FAILED  \] [^ ]+ \([0-9]+ ms\)$' "$log")
skipped=$(grep -cE '^\[  SKIPPED \] [^ ]+ \([0-9]+ ms\)$' "$log")
if [ -z "$passed" ] || { [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; }; then
	echo "unit tests did not finish (exit status $status)"
	failed=$((failed + 1))
fi
echo "${passed:-0} passed, ${failed:-0} failed, ${skipped:-0} skipped"
[ "$status" -eq 0 ]
