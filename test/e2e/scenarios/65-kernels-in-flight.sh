#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# GPU kernels in flight at the checkpoint. hip_kernel_workload (HIP 6.4.3, its kernels built with
# Debian's hipcc) runs kernels on every GPU all the time: a long integer loop, an LDS reduction
# with a global atomic, hipMemset and device->device copies (HIP's own blit kernels). The emulated
# GPU executes them (test/emu/emu_dispatch.c, emu_shader.c); when criu pauses the queues, the waves
# of each dispatch in flight stop and go into the queue's context save area and control stack
# (emu_cwsr.c), as CWSR does, and the emulator logs each preemption.
#
# In the trixie guest, with ROCm 6.4.3 from its root; in the bookworm guest (make check-full, under
# criu 3.17.1 and 4.2.1), with the guest's own ROCm 5.2.3, the workload built with bookworm's hipcc.
# On 2xmi210, under the criu the suite runs (a root whose glibc puts guard regions in thread
# stacks needs criu 4.2 or newer: below that the dump fails and the task runs on, verified):
#   - dumped with -R with a kernel in flight on both GPUs (the log shows the waves saved on each):
#     the task runs on, its waves resumed, its queues run (a heartbeat);
#   - dumped with a kernel in flight on both GPUs, restored on a node of the same shape with
#     other gpu_ids and render minors: the waves come back from the save area (logged), the
#     kernels in flight at either dump finished with the right results, new kernels of every kind
#     run (verify), heartbeats complete;
#   - make check-full: dumped again from there and restored on the same node (the ids of the
#     first restore);
#   - a kernel that reaches an instruction the emulated GPU does not execute is reported to the
#     application as an illegal instruction (the workload's --illegal-instruction mode).
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
userland_private_mounts "$@"
e2e_begin
if [ "${VM_GUEST:-bookworm}" = bookworm ]; then
	# the guest's own ROCm 5.2.3: the workload is built on the host where hipcc is (make check-full
	# installs bookworm's)
	[ -x "$E2E_BIN/hip_kernel_workload" ] || { echo "no hip_kernel_workload built (bookworm's hipcc: make check-full)"; exit 77; }
else
	userland_require
fi

# One launch of the long kernel takes seconds in the guest: the dump always finds one in flight.
# A guest whose vCPUs QEMU runs on a thread each (VM_TCG_THREAD=multi: test/vm/boot.sh) runs
# kernels about twice as fast as one whose vCPUs take turns on one thread, and criu 3.17 pauses
# the queues only once it reaches the task's /dev/kfd, after freezing it, while the GPU goes on:
# a longer launch there.
[ "${VM_TCG_THREAD:-multi}" = multi ] && iters=${E2E_KERNEL_ITERS:-1500} || iters=${E2E_KERNEL_ITERS:-500}
KERNEL_ARGS=(--vram-mb 1 --kernel-kib "${E2E_KERNEL_KIB:-256}" --kernel-iters "$iters")
img=/tmp/img-65

# tap_preempted <what> <mark> <gpus>: since the mark, the emulator saved the waves of a dispatch
# in flight on <gpus> different GPUs.
tap_preempted() {
	local what=$1 mark=$2 want=$3 got
	got=$(dmesg | sed -n "\\|$mark\$|,\$p" |
		sed -nE 's/.*\[cwsr\] queue [0-9]+ \(GPU ([0-9]+)\): dispatch [0-9]+ preempted in workgroup .* waves saved.*/\1/p' |
		sort -u | wc -l)
	tap_check "$what: a kernel was in flight on every GPU, its waves saved ($got of $want GPUs)" [ "$got" -ge "$want" ]
}

# tap_resumed <what> <mark>: since the mark, saved waves came back from a context save area.
tap_resumed() {
	local what=$1 mark=$2 got
	got=$(dmesg | sed -n "\\|$mark\$|,\$p" | grep -c '\[cwsr\] .* resumed in workgroup .* waves restored')
	tap_check "$what: the saved waves came back from the context save area ($got dispatches)" [ "$got" -ge 1 ]
}

# long_kernels_early <pid>: true when every GPU of the process has the long kernel in flight with
# at most a third of its workgroups started, so that a dump begun now (criu takes some 8 s to pause
# the queues here, a launch some 20) finds it still running. The long kernel is told from the
# workload's others (the reduction has as many workgroups, HIP's blit kernels can have as many) by
# its instructions per workgroup: 4 waves of some 7 per iteration, so more than 10 per iteration
# (debugfs: "... dispatch ID workgroups N of T waves_saved W instructions I").
LONG_GROUPS=$(((${E2E_KERNEL_KIB:-256} << 10) / 4 / 256))
LONG_PER_GROUP=$((iters * 10))
long_kernels_early() {
	awk -v pid="$1" -v long="$LONG_GROUPS" -v per_group="$LONG_PER_GROUP" '
		$1 == "process" { cur = ($3 == pid) }
		cur && $1 == "queue" && $5 == "type" && $6 == 2 {
			gpus[$4] = 1
			for (i = 1; i < NF; i++)
				if ($i == "workgroups" && $(i + 3) >= long && $(i + 1) >= 2 && $(i + 1) * 3 <= $(i + 3) &&
				    $(i + 7) > per_group * ($(i + 1) - 1))
					early[$4] = 1
		}
		END { n = 0; for (g in gpus) { n++; if (!early[g]) exit 1 } exit n < 2 }
	' "$EMU_DEBUGFS/processes"
}

# emu_dispatches <pid>: the dispatch of each of the process's AQL queues, as the dump finds them
emu_dispatches() {
	awk -v pid="$1" '
		$1 == "process" { cur = ($3 == pid) }
		cur && $1 == "queue" && $5 == "type" && $6 == 2 { g = $4; sub(/.* dispatch /, "dispatch "); print "#   gpu " g " " $0 }
	' "$EMU_DEBUGFS/processes" | sort -u
}

# wait_long_kernels_early <tag>: until the long kernel is early in flight on both GPUs, seen twice
# half a second apart (a state that holds that long is not one caught in passing); then the
# queues' dispatches, as the dump will find them
wait_long_kernels_early() {
	wait_for "long_kernels_early $pid && sleep 0.5 && long_kernels_early $pid" 120 ||
		log "$1: the long kernel was not early in flight on both GPUs at once within 120 s; dumping anyway"
	emu_dispatches "$pid"
}

# dump_in_flight <tag> <what> [criu options]: wait for the long kernel in flight on both GPUs,
# dump, check the preemptions
dump_in_flight() {
	local tag=$1 what=$2 mark
	shift 2
	wait_long_kernels_early "$tag"
	# what the restore must give back, taken as late as can be (HIP makes events as it goes)
	task_snapshot "$pid" "$RESULTS_DIR/hip_kernel.dumped"
	mark="e2e 65: $tag $what $(date +%s%N)"
	dmesg_mark "$mark"
	if [ "${1:-}" = -R ]; then
		tap_dump "$tag: $what" "$pid" "$img" "$@" || return 1
	else
		tap_dump_gone "$tag: $what" "$pid" "$state" "$img" "$@" || return 1
	fi
	tap_preempted "$tag: $what" "$mark" 2
	LAST_MARK=$mark
}

# log_instruction_rate <tag>: what the shader cores run while the workload's kernels do (a figure,
# not a test: the note of issue 29 quotes it)
log_instruction_rate() {
	local before after t0 t1 rate
	before=$(shader_instructions) t0=$(date +%s%N)
	sleep 3
	after=$(shader_instructions) t1=$(date +%s%N)
	rate=$(awk -v b="$before" -v a="$after" -v ns=$((t1 - t0)) 'BEGIN {
		n = split(b, x, " "); split(a, y, " "); for (i = 1; i <= n; i++) s = s sprintf(" %.0f", (y[i] - x[i]) * 1e9 / ns); print s }')
	log "$1: wave instructions per second, per GPU:$rate"
}

one_userland() {
	local tag="ROCm $version kernels" mark
	wl_fresh hip_kernel preset=2xmi210 -- "${KERNEL_ARGS[@]}" || return
	log_instruction_rate "$tag"
	if [ -n "${WL_ROOT:-}" ] && ! userland_criu_dumps "$version"; then
		tap_dump_fails_runs_on "$tag"
		return
	fi

	# -R first: the task runs on, its preempted kernels resumed (their results are checked with
	# every other round's by the verification after the restore below)
	dump_in_flight "$tag" "dumped with -R, kernels in flight" -R || { wl_kill "$pid"; return; }
	tap_resumed "$tag: running on after the -R dump" "$LAST_MARK"
	tap_heartbeat "$tag: running on after the -R dump" "$pid" "$state"

	dump_in_flight "$tag" "dumped with kernels in flight" || { wl_kill "$pid"; return; }
	emu_reload_or_say "$tag: reload as 2xmi210 with other gpu_ids" preset=2xmi210 \
		gpu_ids=0x0e11,0x0e12 render_minor_base=150 || return
	mark="e2e 65: $tag restore $(date +%s%N)"
	dmesg_mark "$mark"
	tap_restore "$tag: restored on other gpu_ids" "$img" || return
	tap_same_task "$tag: restored on other gpu_ids" "$RESULTS_DIR/hip_kernel.dumped" "$pid" --events-made-since
	tap_alive_verified "$tag: restored on other gpu_ids (every kernel in flight at either dump finished right, new ones run)" "$pid" "$state"
	tap_resumed "$tag: restored on other gpu_ids" "$mark"

	# make check-full: once more, restored on the node it was dumped on (make check's time goes to
	# the other gpu_ids, the harder case)
	if [ "${CHECK_FULL:-0}" = 1 ]; then
		dump_in_flight "$tag" "dumped again, kernels in flight" || { wl_kill "$pid"; return; }
		mark="e2e 65: $tag restore same node $(date +%s%N)"
		dmesg_mark "$mark"
		tap_restore "$tag: restored on the same node" "$img" || return
		tap_alive_verified "$tag: restored on the same node" "$pid" "$state"
		tap_resumed "$tag: restored on the same node" "$mark"
	fi
	rm -rf "$img"
	wl_kill "$pid"
}

# What a failed dump owes the task: it runs on, its kernels finish right.
tap_dump_fails_runs_on() {
	local tag=$1 mark
	wait_long_kernels_early "$tag"
	mark="e2e 65: $tag refused dump $(date +%s%N)"
	dmesg_mark "$mark"
	if wl_dump "$pid" "$img"; then
		tap_not_ok "$tag: criu $(criu_version) cannot dump thread stacks with guard regions" "the dump succeeded"
	else
		tap_ok "$tag: criu $(criu_version) refuses the dump (thread-stack guard regions; criu 4.2 dumps them)"
	fi
	tap_preempted "$tag: the refused dump" "$mark" 2
	tap_resumed "$tag: after the refused dump" "$mark"
	rm -rf "$img"
	tap_alive_verified "$tag: after the failed dump, kernels preempted by it finish right" "$pid" "$state"
	wl_kill "$pid"
}

illegal_instruction() {
	local tag="ROCm $version kernels" out=$RESULTS_DIR/hip_kernel-illegal.out
	emu_reload_or_say "$tag: reload as 2xmi210" preset=2xmi210 || return
	if ${WL_ROOT:+chroot "$WL_ROOT"} "${WL_BIN:-$E2E_BIN}/hip_kernel_workload" --illegal-instruction --state "$RESULTS_DIR/hip_kernel-illegal.state" >"$out" 2>&1; then
		tap_ok "$tag: a kernel reaching an instruction the emulated GPU does not execute is reported to the application as an illegal instruction"
	else
		tap_not_ok "$tag: a kernel reaching an instruction the emulated GPU does not execute is reported to the application as an illegal instruction" \
			"$(tail -n 5 "$out")"
	fi
}

if [ "${VM_GUEST:-bookworm}" = bookworm ]; then
	version=5.2
	log "the guest's own ROCm ($(dpkg-query -W -f='${Package} ${Version}' libamdhip64-5 2>/dev/null)), kernels in flight, under criu $(criu_version)"
	one_userland
	illegal_instruction
	e2e_done
	exit
fi
for version in $(userland_versions); do
	userland_enter "$version" || { tap_not_ok "ROCm $version: its root's binds"; continue; }
	if [[ " $(userland_workloads "$version" --kernels) " == *" hip_kernel "* ]]; then
		log "$(userland_label "$version"), kernels in flight, under criu $(criu_version)"
		one_userland
		illegal_instruction
	else
		tap_skip "ROCm $version: no hip_kernel_workload built in its root (hipcc)"
	fi
	userland_leave
done
e2e_done
