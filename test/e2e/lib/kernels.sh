# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# GPU kernels in flight at a checkpoint: hip_kernel_workload's long kernel caught early on every
# GPU, the dump that preempts it, and what the emulator logs of the waves it saves (e2e/65 and
# e2e/67). Sourced in the guest after test/e2e/lib.sh. The caller sets:
#   pid, state, img     the workload and the images (as the other helpers)
#   KERNELS_TAG         its scenario, for the kernel-log marks ("e2e 65")
#   KERNELS_GPUS        the GPUs the long kernel runs on (default 2)
#   KERNELS_XCCS        the XCCs of each (an MI300X in SPX mode: 8; default 1)
#   KERNELS_ITERS, KERNELS_KIB   the workload's --kernel-iters and --kernel-kib (defaults below)
#
#   kernel_args                       the workload's arguments for such a job
#   wait_long_kernels_early <tag>     until the long kernel is early in flight on every GPU
#   dump_in_flight <tag> <what> [criu options]   wait for that, dump (-R: the task runs on),
#                                     check the preemption on every GPU and XCC; sets LAST_MARK
#   tap_preempted <what> <mark> <gpus>   since the mark, waves saved on <gpus> GPUs, on every XCC
#   tap_resumed <what> <mark>         since the mark, saved waves came back (on every XCC)
#   log_instruction_rate <tag>        the shader cores' wave instructions per second, per GPU
#   tap_hip_aborts <name> <kind>      the HIP job makes a GPU fault (memory|illegal); HIP aborts
#                                     it within the workload's 5 s, naming the HSA status

KERNELS_GPUS=${KERNELS_GPUS:-2}
KERNELS_XCCS=${KERNELS_XCCS:-1}
# One launch of the long kernel takes seconds in the guest: a dump always finds one in flight. A
# guest whose vCPUs QEMU runs on a thread each (VM_TCG_THREAD=multi: test/vm/boot.sh) runs kernels
# about twice as fast as one whose vCPUs take turns on one thread, and criu 3.17 pauses the queues
# only once it reaches the task's /dev/kfd, after freezing it, while the GPU goes on: a longer
# launch there.
if [ "${VM_TCG_THREAD:-multi}" = multi ]; then
	KERNELS_ITERS=${E2E_KERNEL_ITERS:-1500}
else
	KERNELS_ITERS=${E2E_KERNEL_ITERS:-500}
fi
KERNELS_KIB=${E2E_KERNEL_KIB:-256}

kernel_args() {
	echo --vram-mb 1 --kernel-kib "$KERNELS_KIB" --kernel-iters "$KERNELS_ITERS"
}

# The XCC clause of the emulator's preemption and resume lines: " on N of N XCCs" (several XCCs
# per GPU: every one had waves in flight), nothing on one
xcc_clause() {
	[ "$KERNELS_XCCS" -gt 1 ] && echo " on $KERNELS_XCCS of $KERNELS_XCCS XCCs" || echo ""
}

# tap_preempted <what> <mark> <gpus>: since the mark, the emulator saved the waves of a dispatch
# in flight on <gpus> different GPUs, on every XCC of each
tap_preempted() {
	local what=$1 mark=$2 want=$3 got xccs
	xccs=$(xcc_clause)
	got=$(dmesg | sed -n "\\|$mark\$|,\$p" |
		sed -nE "s/.*\\[cwsr\\] queue [0-9]+ \\(GPU ([0-9]+)\\): dispatch [0-9]+ preempted in workgroup .* waves saved \\([0-9]+ bytes\\)$xccs\$/\\1/p" |
		sort -u | wc -l)
	tap_check "$what: a kernel was in flight on every GPU${xccs:+ and XCC}, its waves saved ($got of $want GPUs)" [ "$got" -ge "$want" ]
}

# tap_resumed <what> <mark>: since the mark, saved waves came back from a context save area (on
# every XCC of the GPU)
tap_resumed() {
	local what=$1 mark=$2 got xccs
	xccs=$(xcc_clause)
	got=$(dmesg | sed -n "\\|$mark\$|,\$p" | grep -c "\\[cwsr\\] .* resumed in workgroup .* waves restored$xccs\$")
	tap_check "$what: the saved waves came back from the context save area${xccs:+ of every XCC} ($got dispatches)" [ "$got" -ge 1 ]
}

# long_kernels_early <pid>: true when every GPU of the process has the long kernel in flight with
# at most a third of its workgroups started, so that a dump begun now (criu takes some 8 s to pause
# the queues here, a launch some 20) finds it still running. The long kernel is told from the
# workload's others (the reduction has as many workgroups, HIP's blit kernels can have as many) by
# its instructions per workgroup: 4 waves of some 7 per iteration, so more than 10 per iteration
# (debugfs: "... dispatch ID workgroups N of T waves_saved W instructions I [xccs_busy B of X]";
# the X XCCs of a GPU each have a workgroup in flight, the other started ones have ended).
long_kernels_early() {
	awk -v pid="$1" -v long="$(((KERNELS_KIB << 10) / 4 / 256))" -v per_group="$((KERNELS_ITERS * 10))" \
		-v want="$KERNELS_GPUS" '
		$1 == "process" { cur = ($3 == pid) }
		cur && $1 == "queue" && $5 == "type" && $6 == 2 {
			gpus[$4] = 1
			for (i = 1; i < NF; i++) {
				if ($i != "workgroups")
					continue
				xccs = 1
				for (j = i; j < NF; j++)
					if ($j == "xccs_busy")
						xccs = $(j + 3)
				if ($(i + 3) >= long && $(i + 1) >= 2 * xccs && $(i + 1) * 3 <= $(i + 3) &&
				    $(i + 7) > per_group * ($(i + 1) - xccs))
					early[$4] = 1
			}
		}
		END { n = 0; for (g in gpus) { n++; if (!early[g]) exit 1 } exit n < want }
	' "$EMU_DEBUGFS/processes"
}

# emu_dispatches <pid>: the dispatch of each of the process's AQL queues, as the dump finds them
emu_dispatches() {
	awk -v pid="$1" '
		$1 == "process" { cur = ($3 == pid) }
		cur && $1 == "queue" && $5 == "type" && $6 == 2 { g = $4; sub(/.* dispatch /, "dispatch "); print "#   gpu " g " " $0 }
	' "$EMU_DEBUGFS/processes" | sort -u
}

# wait_long_kernels_early <tag>: until the long kernel is early in flight on every GPU, seen twice
# half a second apart (a state that holds that long is not one caught in passing); then the
# queues' dispatches, as the dump will find them
wait_long_kernels_early() {
	wait_for "long_kernels_early $pid && sleep 0.5 && long_kernels_early $pid" 120 ||
		log "$1: the long kernel was not early in flight on every GPU at once within 120 s; dumping anyway"
	emu_dispatches "$pid"
}

# dump_in_flight <tag> <what> [criu options]: wait for the long kernel in flight on every GPU,
# dump, check the preemptions
dump_in_flight() {
	local tag=$1 what=$2 mark
	shift 2
	wait_long_kernels_early "$tag"
	# what the restore must give back, taken as late as can be (HIP makes events as it goes)
	task_snapshot "$pid" "$RESULTS_DIR/hip_kernel.dumped"
	mark="$KERNELS_TAG: $tag $what $(date +%s%N)"
	dmesg_mark "$mark"
	if [ "${1:-}" = -R ]; then
		tap_dump "$tag: $what" "$pid" "$img" "$@" || return 1
	else
		tap_dump_gone "$tag: $what" "$pid" "$state" "$img" "$@" || return 1
	fi
	tap_preempted "$tag: $what" "$mark" "$KERNELS_GPUS"
	LAST_MARK=$mark
}

# log_instruction_rate <tag>: what the shader cores run while the workload's kernels do (a figure,
# not a test: the issues' notes quote it)
log_instruction_rate() {
	local before after t0 t1 rate
	before=$(shader_instructions) t0=$(date +%s%N)
	sleep 3
	after=$(shader_instructions) t1=$(date +%s%N)
	rate=$(awk -v b="$before" -v a="$after" -v ns=$((t1 - t0)) 'BEGIN {
		n = split(b, x, " "); split(a, y, " "); for (i = 1; i <= n; i++) s = s sprintf(" %.0f", (y[i] - x[i]) * 1e9 / ns); print s }')
	log "$1: wave instructions per second, per GPU:$rate"
}

# tap_hip_aborts <name> <kind>: the HIP job ($pid, $state) makes its GPU fault as <kind> says
# (memory: a store through a wild pointer; illegal: an MFMA); HIP must abort it, naming the HSA
# status, before the workload's own 5 s are up (it writes FAULT FAIL then, and lives on)
tap_hip_aborts() {
	local name=$1 kind=$2 want out=$RESULTS_DIR/hip_kernel.out lines t0 secs
	[ "$kind" = memory ] && want=HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION || want=HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
	lines=$(wc -l <"$out")
	rm -f "$state.fault"
	t0=$(date +%s.%N)
	[ "$kind" = memory ] && kill -s RTMIN+1 "$pid" || kill -s RTMIN+2 "$pid"
	wait_for "! kill -0 $pid 2>/dev/null || [ -s '$state.fault' ]" 30
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	if kill -0 "$pid" 2>/dev/null; then
		tap_not_ok "$name" "$(head -n1 "$state.fault" 2>/dev/null || echo "no abort, no result within 30 s")"
		wl_kill "$pid"
	elif tail -n +"$((lines + 1))" "$out" | grep -q "aborting with error : $want"; then
		tap_ok "$name (HIP aborted the job $secs s after the request, naming $want)"
	else
		tap_not_ok "$name" "the job ended ($secs s) without HIP naming $want: $(tail -n +"$((lines + 1))" "$out" | tail -n 3 | tr '\n' ' ')"
	fi
}
