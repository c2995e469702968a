#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The VM suite (`make check-vm`, and part of `make check`): builds the emulator and the GPU
# workloads, boots ONE guest
# and runs every scenario in it, in order: test/vm/scenarios/NN-*.sh, then test/e2e/scenarios/*.sh.
# Prints one line per result (PASS: / FAIL: / SKIP: <scenario>[: <sub-test>]) as scenarios finish,
# the logs of failures, the wall time, and as its very last line "N passed, N failed, N skipped".
# Everything stays in build/vm/last-run/. The contract for scenarios is in test/vm/README.md.
#
# Environment:
#   VM_SCENARIOS='01-* 03-*'  run only the scenarios whose names match one of these patterns
#   VM_SCENARIOS_EXCLUDE='…'  and none whose name matches one of these
#   VM_MEM=MB                 guest memory (default 3072)
#   VM_SCENARIO_DIRS='...'    where scenarios are (default: test/vm/scenarios test/e2e/scenarios)
#   E2E_CYCLES=N              checkpoint cycles of the soak scenario e2e/32 (default 10)
#   FAULT_SWEEP=full          every occurrence of every call in the fault sweep e2e/95 (default: a
#                             deterministic part)
#   CHECK_FULL=1              make check-full's longer variants of some scenarios (e2e/65: a
#                             second restore, on the same node)
#   ROCM_USERLANDS='6.4 …'    the ROCm userland roots whose processes e2e/61, 62 and 83 checkpoint
#                             (default: every one built)
#   VM_TCG_THREAD=single|multi  how QEMU runs the vCPUs (test/vm/boot.sh; default multi)
#   VM_GUEST=NAME             the guest (test/vm/prepare.sh): bookworm (the default; Debian 12,
#                             Linux 6.1) or trixie (Debian 13, the newest kernel Debian ships for it)
#   VM_CRIU=VERSION           run the scenarios under this criu. In the bookworm guest: 3.17.1
#                             (its package, the default) or 4.2.1 (test/criu/build.sh builds it
#                             from Debian's source). In the trixie guest: 4.3 (Debian experimental's,
#                             the default) or 4.1.1 (trixie's package). Result lines are labelled
#                             "[criu VERSION]", and "[trixie, criu VERSION]" in the trixie guest
# Exit status: 0 if nothing failed, 1 otherwise.
set -uo pipefail
. "$(dirname "$0")/boot.sh"
cd "$VM_TOP" || exit 1

t_start=$(date +%s.%N)
criu_label=${VM_CRIU:+[criu $VM_CRIU] }
case "$VM_GUEST" in
bookworm) default_criu=3.17.1 ;;
*) default_criu=4.3 ;;
esac
VM_CRIU=${VM_CRIU:-$default_criu}
run="$VM_CACHE/last-run"
[ "$VM_GUEST" = bookworm ] || run+="-$VM_GUEST"
[ "$VM_CRIU" = "$default_criu" ] || run+="-criu-$VM_CRIU"
passed=0 failed=0 skipped=0

[ "$VM_GUEST" = bookworm ] || criu_label="[$VM_GUEST, criu $VM_CRIU] "
result() { # result PASS|FAIL|SKIP <what> [reason]
	echo "$1: $criu_label$2"
	[ -z "${3:-}" ] || echo "  # $3"
	case $1 in
	PASS) passed=$((passed + 1)) ;;
	FAIL) failed=$((failed + 1)) ;;
	SKIP) skipped=$((skipped + 1)) ;;
	esac
}

# show <title> <file> <lines>: the tail of a log, indented, so no line looks like a result.
show() {
	[ -s "$2" ] || return 0
	echo "  --- $1 (last $3 lines of ${2#"$VM_TOP"/})"
	tail -n "$3" "$2" | sed 's/^/  | /'
}

finish() {
	local i times=""
	for i in "${!names[@]}"; do
		[ ! -e "$run/scenarios/${names[$i]}/seconds" ] ||
			times+=" ${names[$i]} $(cat "$run/scenarios/${names[$i]}/seconds")s,"
	done
	[ -z "$times" ] || echo "VM suite: scenario times:${times%,}"
	echo "VM suite: wall time $(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s" \
		"(guest $(vm_elapsed "$run" qemu ended) s, boot overhead $(vm_elapsed "$run" qemu started) s);" \
		"logs in ${run#"$VM_TOP"/}/"
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ]
	exit
}

# --- what to run -------------------------------------------------------------------------------

# Scenario names: test/vm/scenarios/NN-x.sh is "NN-x", test/e2e/scenarios/NN-y.sh is "e2e/NN-y".
scenario_name() {
	local n=${1%.sh}
	case "$n" in
	test/vm/scenarios/*) echo "${n#test/vm/scenarios/}" ;;
	*) n=${n#test/}; echo "${n/\/scenarios\//\/}" ;;
	esac
}

scenarios=() names=()
for dir in ${VM_SCENARIO_DIRS:-test/vm/scenarios test/e2e/scenarios}; do
	for s in "$dir"/*.sh; do
		[ -e "$s" ] || continue
		name=$(scenario_name "$s")
		if [ -n "${VM_SCENARIOS:-}" ]; then
			match=0
			for pattern in $VM_SCENARIOS; do
				# shellcheck disable=SC2053 # the pattern is a glob on purpose
				[[ $name == $pattern || $s == $pattern ]] && match=1
			done
			[ "$match" -eq 1 ] || continue
		fi
		skip=0
		for pattern in ${VM_SCENARIOS_EXCLUDE:-}; do
			# shellcheck disable=SC2053 # the pattern is a glob on purpose
			[[ $name == $pattern || $s == $pattern ]] && skip=1
		done
		[ "$skip" -eq 0 ] || continue
		scenarios+=("$s")
		names+=("$name")
	done
done

# A scenario's "# timeout: N" line, or 300 s (the same rule as suite-guest.sh).
scenario_limit() {
	local t
	t=$(sed -n 's/^# timeout: *\([0-9][0-9]*\) *$/\1/p' "$1" | head -n1)
	echo "${t:-300}"
}

vm_prepare
guest_env="${E2E_CYCLES:+E2E_CYCLES=$E2E_CYCLES }${FAULT_SWEEP:+FAULT_SWEEP=$FAULT_SWEEP }"
guest_env+="${ROCM_USERLANDS:+ROCM_USERLANDS=$(printf %q "$ROCM_USERLANDS") }"
guest_env+="${CHECK_FULL:+CHECK_FULL=$CHECK_FULL }"
guest_env+="VM_CRIU=$VM_CRIU VM_TCG_THREAD=$VM_TCG_THREAD "
case "$VM_GUEST:$VM_CRIU" in
bookworm:3.17.1 | trixie:4.1.1) ;; # the guest's own package
trixie:4.3) guest_env+="PATH=/opt/criu-4.3:\$PATH " ;;
trixie:*) result FAIL "criu $VM_CRIU" "the trixie guest has criu 4.3 and 4.1.1"; finish ;;
*)
	criu_bin=$(test/criu/build.sh "$VM_CRIU") || { result FAIL "criu $VM_CRIU: build" "test/criu/build.sh $VM_CRIU failed"; finish; }
	guest_env+="PATH=$(printf %q "${criu_bin%/criu}"):\$PATH "
	;;
esac
limit=60
args=()
for i in "${!scenarios[@]}"; do
	limit=$((limit + $(scenario_limit "${scenarios[$i]}") + 15))
	args+=("${names[$i]}=${scenarios[$i]}")
done
vm_new_run "$run" "$limit" "${guest_env}criu --version >$(printf %q "$run/criu-version") 2>&1; ${guest_env}exec test/vm/suite-guest.sh $(printf %q "$run/scenarios")$(printf ' %q' "${args[@]}")"
mkdir -p "$run/scenarios"

# --- the emulator --------------------------------------------------------------------------------

if [ "$VM_GUEST" = trixie ]; then
	# The emulator, its clients and the workloads, built in the guest's own root.
	if test/vm/trixie-build.sh "$run/emu-build.log"; then
		result PASS "emulator, clients and workloads: build in the trixie root"
	else
		result FAIL "emulator, clients and workloads: build in the trixie root" "test/vm/trixie-build.sh failed"
		show "test/vm/trixie-build.sh" "$run/emu-build.log" 30
	fi
	# ROCm userlands of their own (scenario 33), with our ROCm programs built in each.
	for version in 6.4 7.2; do
		if test/vm/rocm-build.sh "$version" "$run/rocm-$version-build.log"; then
			result PASS "ROCm $version root and programs: build"
		else
			result FAIL "ROCm $version root and programs: build" "test/vm/rocm-build.sh $version failed"
			show "test/vm/rocm-build.sh $version" "$run/rocm-$version-build.log" 30
		fi
	done
elif [ ! -e test/emu/Makefile ]; then
	result FAIL "emulator" "not built: test/emu/Makefile does not exist yet"
elif make -C test/emu >"$run/emu-build.log" 2>&1; then
	result PASS "emulator: build"
else
	result FAIL "emulator: build" "make -C test/emu failed"
	show "make -C test/emu" "$run/emu-build.log" 30
fi
# The GPU workloads the e2e scenarios checkpoint; built on the host like the emulator.
if make -C test/e2e >"$run/e2e-build.log" 2>&1; then
	result PASS "workloads: build"
else
	result FAIL "workloads: build" "make -C test/e2e failed"
	show "make -C test/e2e" "$run/e2e-build.log" 30
fi

[ "${#scenarios[@]}" -gt 0 ] || { echo "VM suite: no scenario matches '${VM_SCENARIOS:-}'"; finish; }

# --- results ---------------------------------------------------------------------------------------

# report <index>: the result lines of a finished scenario, from its TAP lines or its status.
report() {
	local s=${scenarios[$1]} name=${names[$1]} dir rc lines kind sub why
	dir=$run/scenarios/$name
	rc=$(cat "$dir/rc")
	# One "KIND<TAB>name<TAB>reason" per TAP result; a plan with more results than seen adds one
	# failure.
	lines=$(awk '
		/^(not )?ok([ \t]|$)/ {
			bad = ($1 == "not"); $0 = bad ? substr($0, 8) : substr($0, 3)
			sub(/^[ \t]*[0-9]+/, ""); sub(/^[ \t]*-?[ \t]*/, "")
			kind = bad ? "FAIL" : "PASS"; why = ""
			if (match($0, /[ \t]*#[ \t]*[Ss][Kk][Ii][Pp]/)) {
				why = substr($0, RSTART + RLENGTH); sub(/^[^ \t]*[ \t]*/, "", why)
				$0 = substr($0, 1, RSTART - 1); kind = "SKIP"
			}
			n++; printf "%s\t%s\t%s\n", kind, $0, why; next
		}
		/^1\.\.[0-9]+/ { plan = substr($1, 4) + 0 }
		END { if (plan > n) printf "FAIL\tonly %d of %d planned results\t\n", n, plan }
	' "$dir/output")

	local failures=0
	while IFS=$'\t' read -r kind sub why; do
		[ -n "$kind" ] || continue
		[ "$kind" = FAIL ] && failures=$((failures + 1))
		result "$kind" "$name${sub:+: $sub}" "$why"
	done <<<"$lines"
	if [ -z "$lines" ]; then
		case "$rc" in
		0) result PASS "$name" ;;
		77) result SKIP "$name" "$(grep -v '^suite:' "$dir/output" | tail -n1)" ;;
		esac
	fi
	case "$rc" in
	0 | 77) ;;
	124)
		result FAIL "$name" "timed out after $(scenario_limit "$s") s"
		failures=$((failures + 1))
		;;
	*)
		# A failing status counts unless a "not ok" line already told of it.
		if ! grep -q '^not ok' "$dir/output"; then
			result FAIL "$name" "exit status $rc"
			failures=$((failures + 1))
		fi
		;;
	esac
	[ "$failures" -eq 0 ] || details "$dir"
}

# The logs of a failed scenario.
details() {
	local dir=$1 log
	show "output" "$dir/output" 40
	show "guest dmesg" "$dir/dmesg" 20
	for log in "$dir"/*.log; do
		[ -e "$log" ] && show "$(basename "$log")" "$log" 25
	done
}

next=0
poll_results() {
	while [ "$next" -lt "${#scenarios[@]}" ] && [ -e "$run/scenarios/${names[$next]}/rc" ]; do
		report "$next"
		next=$((next + 1))
	done
}

# The criu the scenarios ran under, as it reports itself.
criu_seen() {
	local want=$VM_CRIU
	if grep -q "^Version: $want\$" "$run/criu-version" 2>/dev/null; then
		result PASS "criu in the guest: $(head -n1 "$run/criu-version")"
	else
		result FAIL "criu in the guest" "expected criu $want, saw: $(head -n1 "$run/criu-version" 2>/dev/null)"
	fi
}

for s in "${scenarios[@]}"; do
	[ -x "$s" ] || echo "VM suite: $s is not executable; it will fail"
done
vm_boot "$run" "${VM_MEM:-3072}" "$run/guest-output" poll_results
qemu_rc=$?
poll_results
criu_seen

# Whatever did not finish: the guest died (panic, time limit, broken test bed).
if [ "$next" -lt "${#scenarios[@]}" ]; then
	if [ "$qemu_rc" -eq 124 ]; then
		why="the guest hit the host-side time limit (${limit}s + ${VM_BOOT_MARGIN}s) and was killed"
	else
		why="the guest ended early (QEMU status $qemu_rc; panic or test-bed failure)"
	fi
	if [ -e "$run/scenarios/${names[$next]}/output" ]; then
		result FAIL "${names[$next]}" "did not finish: $why"
		details "$run/scenarios/${names[$next]}"
		next=$((next + 1))
	else
		echo "VM suite: $why"
		show "guest output" "$run/guest-output" 20
	fi
	show "guest console" "$run/console.log" 40
	while [ "$next" -lt "${#scenarios[@]}" ]; do
		result FAIL "${names[$next]}" "not run: $why"
		next=$((next + 1))
	done
fi
finish
