#!/usr/bin/env bash
# The test command behind `make check` and `make check-full`: the host suites and the QEMU test
# bed, as the named parts below. Every suite ends with its own "N passed, N failed[, N skipped]"
# line; this script adds them up, prints where the time went (the suites and the slowest
# scenarios, with their seconds) and the grand total as its last line.
#
# Usage: test/run-all.sh PART...
#   check           what `make check` runs (about 30 minutes on a 2-core machine)
#   full            check, then every part of check-full
#   <part>          one part of check-full (test/README.md has what each runs and how long)
#   --list          the part names, one per line
#   --ci-part       the part .ci/run adds to `make check` for the commit checked out
#   --matrix        test/README.md's table: every scenario, where each part runs it, and its
#                   seconds in the last run that ran it there (build/test-times.tsv)
# test/README.md has the whole matrix: every scenario, in which guest, under which criu, in which
# part, and how long it took when last measured.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

# The parts of check-full, in the order `make check-full` runs them. Each stays under 45 minutes
# on a 2-core machine, and the ones .ci/run takes in turn under 25 (with make check, 60).
# Seven: a prime number (below). The soak runs within bookworm; PART=soak runs it alone.
PARTS=(bookworm fault-sweep criu-4.2 trixie trixie-rocm containers criu-4.1)

case "${1:-}" in
--list)
	printf '%s\n' "${PARTS[@]}"
	exit 0
	;;
--ci-part)
	# One part per commit, in turn: the number of commits on the branch picks it. A landing of k
	# commits moves k parts on; with a prime number of parts every part comes round within as
	# many landings as there are parts, whatever k is (unless k is a multiple of it).
	n=$(git -C "$top" rev-list --count HEAD 2>/dev/null || echo 0)
	echo "${PARTS[$((n % ${#PARTS[@]}))]}"
	exit 0
	;;
'')
	echo "usage: test/run-all.sh check|full|PART... (--list for the parts)" >&2
	exit 2
	;;
esac

# --- the scenario lists ------------------------------------------------------------------------

# Two guests (test/vm/README.md): bookworm (Debian 12, Linux 6.1, criu 3.17.1, ROCm 5.2.3), the
# oldest stack we support, and trixie (Debian 13, the trixie-backports kernel, criu 4.3 and 4.1.1,
# Podman 5 with crun, ROCm 6.1, and roots of sid's ROCm 6.4.3 and experimental's 7.2.4), today's
# stack. `make check` runs each proof once, in the guest where it means most; check-full runs the
# rest of the matrix. Why a scenario sits where it does is in test/README.md.

# make check, trixie guest under criu 4.3: the emulator's tests, ROCm 6.4.3's and 7.2.4's clients,
# and what today's kernel, criu and ROCm can change: same node, other gpu_ids, a process tree, -R,
# render before kfd, --stream, a secondary KFD context (refused), criu's parent chain (criu 4.3
# tracks dirty memory with PAGEMAP_SCAN), the copy beside criu, ROCm 6.4.3's processes (runtime,
# HIP, ranks sharing GPU memory, kernels in flight, faults after a restore) in Podman 5 and Docker
# 28 containers. A 6 GiB guest: Docker's checkpoint passes through containerd's content store.
CHECK_TRIXIE='00-* 10-* 20-* 33-* e2e/20-* e2e/21-* e2e/25-* e2e/26-* e2e/29-* e2e/33-* e2e/36-* e2e/39-* e2e/44-* e2e/45-* e2e/46-* e2e/62-* e2e/64-* e2e/65-* e2e/66-* e2e/67-* e2e/83-* e2e/84-*'
# make check, trixie guest under its own criu 4.1.1: ROCm 6.1's runtime workload.
CHECK_TRIXIE_411='e2e/60-*'
# make check, bookworm guest under criu 3.17.1: every scenario but the bulk data, re-checkpointing
# on other ids, the installed package, the chain, the stream and -R (the trixie guest runs the last
# three), ROCm 5.2.3's runtime workload and HIP kernels (the trixie guest runs 6.1's and 6.4.3's),
# the BO over 4 GiB and Podman (guests of their own in check-full).
BOOKWORM_REST='e2e/26-* e2e/28-* e2e/33-* e2e/34-* e2e/39-* e2e/40-* e2e/41-* e2e/43-* e2e/60-* e2e/65-* e2e/70-*'
# The checkpoint/restore scenarios every other criu runs (check-full: 4.2.1 in the bookworm guest,
# 4.1.1 in the trixie guest).
CRIU_SCENARIOS='e2e/20-* e2e/21-* e2e/25-* e2e/26-* e2e/27-* e2e/28-* e2e/29-* e2e/32-* e2e/33-* e2e/37-* e2e/39-* e2e/44-* e2e/60-* e2e/66-*'
CRIU_CYCLES=4
# ROCm userland scenarios: make check runs them with ROCm 6.4.3, check-full with 7.2.4 too.
ROCM_SCENARIOS='33-* e2e/61-* e2e/62-* e2e/64-* e2e/65-* e2e/66-* e2e/67-* e2e/83-*'

# --- running and counting ----------------------------------------------------------------------

total_passed=0 total_failed=0 total_skipped=0
start=$(date +%s)
timings=$(mktemp)  # "<seconds>\tsuite\t<name>" and "<seconds>\tscenario\t<suite>: <name>"
trap 'rm -f "$timings"' EXIT
# Every scenario's seconds, kept across runs for --matrix: "<suite>\t<scenario>\t<seconds>".
times_kept=build/test-times.tsv

# run_suite <title> <command...>: runs it, shows its output, adds its result line to the total.
run_suite() {
	local name=$1
	shift
	local out t0 secs
	out=$(mktemp)
	t0=$(date +%s)
	echo "=== $name"
	"$@" 2>&1 | tee "$out"
	secs=$(($(date +%s) - t0))
	echo "=== $name: $secs s"
	printf '%s\tsuite\t%s\n' "$secs" "$name" >>"$timings"
	# The VM suite's "scenario times: a 1.0s, b 2.0s" line.
	sed -n 's/^VM suite: scenario times: //p' "$out" | tail -n1 | tr ',' '\n' |
		awk -v suite="$name" -v kept="$times_kept" 'NF == 2 {
			sub(/s$/, "", $2); printf "%s\tscenario\t%s: %s\n", $2, suite, $1
			printf "%s\t%s\t%s\n", suite, $1, $2 >>kept
		}' >>"$timings"
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n1)
	if [ -z "$line" ]; then
		echo "FAIL: $name printed no result line"
		total_failed=$((total_failed + 1))
	else
		local p f s
		p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")
		f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
		s=$(sed -nE 's/.*, ([0-9]+) skipped.*/\1/p' <<<"$line")
		total_passed=$((total_passed + p))
		total_failed=$((total_failed + f))
		total_skipped=$((total_skipped + ${s:-0}))
	fi
	rm -f "$out"
}

# vm <title> <VAR=value...> -- runs the VM suite with that environment.
vm() {
	local title=$1
	shift
	run_suite "VM suite ($title)" env "$@" test/vm/run-suite.sh
}

# --- the parts ---------------------------------------------------------------------------------

part_check() {
	run_suite "unit tests" test/unit/run.sh build/test/unit/unit-tests
	run_suite "unit tests, the plugin as criu 4.3 calls it" test/unit/run.sh build/test/unit/criu-4.3-tests
	# Memory errors and undefined behaviour anywhere in the plugin's code the unit tests reach,
	# and data races in its threads (the copy worker, the restore copies, the guards).
	# PluginLoad dlopens the plugin's production build, which no sanitizer instruments (its code
	# runs instrumented in every other test): under ASan its scan of the host program's read-only
	# data for criu's hook names would read the redzones ASan puts between the test's globals.
	run_suite "unit tests under ASan and UBSan" env GTEST_FILTER='-PluginLoad.*' \
		test/unit/run.sh build/test/unit/unit-tests-asan
	run_suite "unit tests under TSan" env GTEST_FILTER='-PluginLoad.*' test/unit/run.sh build/test/unit/unit-tests-tsan
	# The emulated GPU's shader core and its context save area codec, on the host.
	run_suite "emulator shader core" build/test/emu/shader_test
	run_suite "emulator context save area" build/test/emu/cwsr_test
	# Every decoder of outside data under libFuzzer for a short smoke period (make fuzz runs longer).
	run_suite "fuzzed decoders, ${FUZZ_SMOKE_SECONDS:=10} s each" test/fuzz/run.sh "$FUZZ_SMOKE_SECONDS" build/fuzz/fuzz_*
	# Every document the tree cites is in the tree, and every section mark names a heading there.
	run_suite "documentation" test/docs/run.sh
	# before the VM suite: its installed-package scenario installs this .deb in the guest
	run_suite "Debian package" test/package/run.sh
	[ "${SKIP_VM:-0}" != 1 ] || { echo "=== VM suites skipped (SKIP_VM=1)"; return; }
	# The soak (e2e/32) at 4 cycles: fds, VRAM and criu's RSS are flat by then; check-full gives
	# it 50.
	vm "bookworm, criu 3.17.1" VM_CRIU=3.17.1 VM_SCENARIOS_EXCLUDE="$BOOKWORM_REST e2e/42-* e2e/8*" E2E_CYCLES=4
	vm "trixie, criu 4.3" VM_GUEST=trixie VM_CRIU=4.3 VM_MEM=6144 ROCM_USERLANDS=6.4 \
		VM_SCENARIOS="$CHECK_TRIXIE" E2E_CYCLES=5
	vm "trixie, criu 4.1.1" VM_GUEST=trixie VM_CRIU=4.1.1 ROCM_USERLANDS=6.4 \
		VM_SCENARIOS="$CHECK_TRIXIE_411" E2E_CYCLES=$CRIU_CYCLES
}

# The bookworm guest's scenarios make check leaves out, ROCm 5.2.3's HIP kernels in flight (bookworm's
# hipcc builds them: scripts/install-deps.sh --full installs it), the guests larger than the
# suite's: a BO over 4 GiB in 10 GiB (it copies 4 GiB each way under emulation), Podman and its
# storage in 4 GiB; and the soak at its full length.
part_bookworm() {
	vm "bookworm, criu 3.17.1, the rest" VM_CRIU=3.17.1 VM_SCENARIOS="$BOOKWORM_REST" CHECK_FULL=1
	vm "bookworm, criu 3.17.1, 10 GiB guest" VM_CRIU=3.17.1 VM_MEM=10240 VM_SCENARIOS='e2e/42-*'
	vm "bookworm, criu 3.17.1, 4 GiB guest" VM_CRIU=3.17.1 VM_MEM=4096 VM_SCENARIOS='e2e/8*'
	part_soak
}

# The soak at its full length: 50 checkpoint cycles per workload.
part_soak() {
	vm "bookworm, criu 3.17.1, 50 cycles" VM_CRIU=3.17.1 VM_SCENARIOS='e2e/32-*' E2E_CYCLES=50
}

# The fault sweep over every occurrence of every call (make check runs a deterministic part of it
# in each guest).
part_fault_sweep() {
	vm "bookworm, criu 3.17.1, every fault" VM_CRIU=3.17.1 VM_SCENARIOS='e2e/95-*' FAULT_SWEEP=full
}

# criu 4.2.1, built from Debian's source, in the bookworm guest: the checkpoint/restore scenarios,
# kernels in flight, criu killed mid-dump and mid-restore.
part_criu_4_2() {
	vm "bookworm, criu 4.2.1" VM_CRIU=4.2.1 VM_SCENARIOS="$CRIU_SCENARIOS e2e/65-* e2e/90-* e2e/91-*" \
		E2E_CYCLES=$CRIU_CYCLES CHECK_FULL=1
}

# The trixie guest under criu 4.3: every scenario make check runs only in the bookworm guest.
part_trixie() {
	vm "trixie, criu 4.3, the rest" VM_GUEST=trixie VM_CRIU=4.3 VM_MEM=4096 ROCM_USERLANDS=6.4 \
		VM_SCENARIOS_EXCLUDE="$CHECK_TRIXIE $ROCM_SCENARIOS e2e/42-* e2e/8*" E2E_CYCLES=$CRIU_CYCLES
}

# ROCm 7.2.4's processes and containers, and 6.4.3's restored on a larger node (e2e/61), its
# kernels in flight restored a second time and on MI300X CPX partitions and an eight-GPU MI300X
# node (CHECK_FULL), under criu 4.3. That node's job holds some 6 GiB (800 MiB per MI300X, a
# context save area per XCC of every queue) and its images as much again, in the guest's memory:
# a 16 GiB guest (QEMU takes the memory as the guest uses it).
part_trixie_rocm() {
	vm "trixie, criu 4.3, ROCm 7.2.4" VM_GUEST=trixie VM_CRIU=4.3 VM_MEM=4096 ROCM_USERLANDS=7.2 \
		VM_SCENARIOS="$ROCM_SCENARIOS"
	vm "trixie, criu 4.3, ROCm 6.4.3, CHECK_FULL" VM_GUEST=trixie VM_CRIU=4.3 VM_MEM=16384 \
		ROCM_USERLANDS=6.4 VM_SCENARIOS='e2e/61-* e2e/65-* e2e/67-*' CHECK_FULL=1
}

# ROCm 6.4.3's job in Docker containers given a subset of the GPUs and refused, and in pods under
# containerd's CRI, restored from a checkpoint archive on another node and refused (CHECK_FULL),
# under criu 4.3; an 8 GiB guest (checkpoints pass through containerd's content store, vfs copies
# the image for every container).
part_containers() {
	vm "trixie, criu 4.3, ROCm 6.4.3, containers, CHECK_FULL" VM_GUEST=trixie VM_CRIU=4.3 VM_MEM=8192 \
		ROCM_USERLANDS=6.4 VM_SCENARIOS='e2e/84-* e2e/85-*' CHECK_FULL=1
}

# trixie's own criu 4.1.1: the checkpoint/restore scenarios, and ROCm 6.4.3's processes, which
# criu before 4.2 cannot dump (sid's glibc puts guard regions in thread stacks): the dump fails
# and the task runs on.
part_criu_4_1() {
	vm "trixie, criu 4.1.1" VM_GUEST=trixie VM_CRIU=4.1.1 ROCM_USERLANDS=6.4 \
		VM_SCENARIOS="$CRIU_SCENARIOS e2e/61-* e2e/64-* e2e/65-*" E2E_CYCLES=$CRIU_CYCLES
}

run_part() {
	local fn=part_${1//-/_}
	fn=${fn//./_}
	if ! declare -F "$fn" >/dev/null; then
		echo "FAIL: no part named '$1' (test/run-all.sh --list)"
		total_failed=$((total_failed + 1))
		return
	fi
	echo "##### part $1"
	"$fn"
}

# test/README.md's table (--matrix): the parts are walked with vm() only noting what each run
# would run.
matrix() {
	local runs part title inc exc f name cells_check cells_full secs cell
	runs=$(mktemp)
	run_suite() { :; }
	vm() {
		local kv inc='' exc=''
		for kv in "${@:2}"; do
			case $kv in
			VM_SCENARIOS=*) inc=${kv#*=} ;;
			VM_SCENARIOS_EXCLUDE=*) exc=${kv#*=} ;;
			esac
		done
		printf '%s|%s|%s|%s\n' "$part" "$1" "$inc" "$exc" >>"$runs"
	}
	for part in check "${PARTS[@]}"; do
		f=part_${part//-/_}
		"${f//./_}"
	done
	echo "| scenario | make check | check-full part: guest, criu |"
	echo "|---|---|---|"
	for f in test/vm/scenarios/*.sh test/e2e/scenarios/*.sh; do
		name=${f%.sh}
		case $f in
		test/vm/*) name=${name#test/vm/scenarios/} ;;
		*) name=e2e/${name#test/e2e/scenarios/} ;;
		esac
		cells_check='' cells_full=''
		while IFS='|' read -r part title inc exc; do
			matches "$name" "$inc" "$exc" || continue
			secs=$(awk -F'\t' -v s="VM suite ($title)" -v n="$name" '$1 == s && $2 == n { t = $3 } END { if (t != "") printf "%.0f", t }' \
				"$times_kept" 2>/dev/null)
			cell="$title${secs:+: $secs s}"
			if [ "$part" = check ]; then
				cells_check+="${cells_check:+<br>}$cell"
			else
				cells_full+="${cells_full:+<br>}\`$part\`: $cell"
			fi
		done <"$runs"
		echo "| \`$name\` | ${cells_check:--} | ${cells_full:--} |"
	done
	rm -f "$runs"
}

# matches <name> <patterns> <exclude patterns>: the rule of test/vm/run-suite.sh.
matches() {
	local p hit=0
	# shellcheck disable=SC2053 # the patterns are globs on purpose
	if [ -z "$2" ]; then hit=1; else for p in $2; do [[ $1 == $p ]] && hit=1; done; fi
	# shellcheck disable=SC2053
	for p in $3; do [[ $1 == $p ]] && hit=0; done
	[ "$hit" -eq 1 ]
}

if [ "$1" = --matrix ]; then
	matrix
	exit 0
fi

mkdir -p build
for arg in "$@"; do
	if [ "$arg" = full ]; then
		run_part check
		for p in "${PARTS[@]}"; do run_part "$p"; done
	else
		run_part "$arg"
	fi
done

# --- where the time went -----------------------------------------------------------------------

echo "=== where the time went ($*)"
awk -F'\t' '$2 == "suite" { printf "%7d s  %s\n", $1, $3 }' "$timings"
echo "--- the slowest scenarios"
awk -F'\t' '$2 == "scenario" { printf "%7.0f s  %s\n", $1, $3 }' "$timings" | sort -rn | head -n 15
echo "=== total time $(($(date +%s) - start)) s"
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
[ "$total_failed" -eq 0 ]
