#!/bin/bash
# Runner self-test: TAP results of every kind, a diagnostic, and a log left in RESULTS_DIR.
. test/vm/lib.sh
tap_ok "first"
tap_not_ok "second" "why it failed"
tap_skip "third" "a reason"
TAP_N=$((TAP_N + 1))
echo "ok $TAP_N - raw line # skip raw reason"
echo "a criu-like log" >"$RESULTS_DIR/dump.log"
tap_done
