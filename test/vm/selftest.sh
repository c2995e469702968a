#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Tests the VM suite runner itself: runs test/vm/run-suite.sh over test/vm/selftest/ (scenarios
# that pass, fail, skip, time out, leave processes behind and panic the guest) and compares what
# it reports with what it must report. One boot, about a minute. Not part of `make check`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

out=$(VM_SCENARIO_DIRS=test/vm/selftest test/vm/run-suite.sh 2>&1)
rc=$?
results=$(grep -E '^(PASS|FAIL|SKIP): vm/selftest/' <<<"$out")
expected='PASS: vm/selftest/01-tap: first
FAIL: vm/selftest/01-tap: second
SKIP: vm/selftest/01-tap: third
SKIP: vm/selftest/01-tap: raw line
FAIL: vm/selftest/02-exit-status
SKIP: vm/selftest/03-skip
FAIL: vm/selftest/04-timeout
PASS: vm/selftest/05-short-plan: fine
FAIL: vm/selftest/05-short-plan: only 1 of 3 planned results
FAIL: vm/selftest/05-short-plan
FAIL: vm/selftest/06-panic
FAIL: vm/selftest/07-not-run'

passed=0 failed=0
check() { # check <name> <condition...>
	local name=$1
	shift
	if "$@"; then
		echo "PASS: selftest: $name"
		passed=$((passed + 1))
	else
		echo "FAIL: selftest: $name"
		failed=$((failed + 1))
	fi
}
contains() { grep -qF -- "$1" <<<"$out"; }

check "result lines" [ "$results" = "$expected" ]
[ "$results" = "$expected" ] || diff <(echo "$expected") <(echo "$results") | sed 's/^/  | /'
last=$(tail -n1 <<<"$out")
counts="$(grep -c '^PASS: ' <<<"$out") passed, $(grep -c '^FAIL: ' <<<"$out") failed, $(grep -c '^SKIP: ' <<<"$out") skipped"
check "the last line counts the result lines" [ "$last" = "$counts" ]
check "exit status 1 when something failed" [ "$rc" -eq 1 ]
check "a skip shows its reason" contains "  # skipping: nothing to do"
check "a failure shows the scenario's output" contains "  | # why it failed"
check "a failure shows the logs the scenario left" contains "--- dump.log"
check "a timeout is reported as such" contains "# timed out after 3 s"
check "what a scenario leaves running is killed" \
	grep -q '^suite: killing what vm/selftest/04-timeout left running' build/vm/last-run/scenarios/vm/selftest/04-timeout/output
check "a panic shows the guest console" contains "Kernel panic - not syncing: sysrq triggered crash"
check "the scenarios after a panic are not run" contains "# not run: the guest ended early"
[ "$failed" -eq 0 ] || { echo "--- run-suite.sh said:"; echo "$out" | sed 's/^/  | /'; }
echo "$passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
