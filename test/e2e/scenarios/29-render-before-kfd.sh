#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A render-node fd restored before the /dev/kfd fd of the same process (Documentation/upstream-compatibility.md
# §2.5: upstream's render-node restore relies on maps the kfd restore fills). kfd_workload
# --render-first opens its render nodes before /dev/kfd, so their fds are lower and criu restores
# them first. Dump, reload the emulator with other gpu_ids and render minors, restore: the render
# fds are mapped to the right new GPUs, and the task verifies (VRAM without host access is mapped
# through its own render fd, which must be the one KFD bound the VM to) and runs.
# kfd_workload only: the thunk always opens /dev/kfd first.
# timeout: 180
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

# fd_numbers <pid> <ERE>: the fds of the process whose target matches, sorted, one line.
fd_numbers() {
	local fd
	for fd in /proc/"$1"/fd/*; do
		readlink "$fd" | grep -Eq "$2" && echo "${fd##*/}"
	done | sort -n | tr '\n' ' '
}

# render_below_kfd <pid>: every render-node fd is lower than the /dev/kfd fd; sets RENDER_FDS
render_below_kfd() {
	local k
	RENDER_FDS=$(fd_numbers "$1" '^/dev/dri/renderD')
	k=$(fd_numbers "$1" '^/dev/kfd$')
	KFD_FD=${k%% *}
	log "pid $1: render-node fds: ${RENDER_FDS:-none}; /dev/kfd fd: ${k:-none}"
	[ -n "$RENDER_FDS" ] && [ -n "$k" ] && [ "$(echo $RENDER_FDS | tr ' ' '\n' | tail -n1)" -lt "$KFD_FD" ]
}

# same_fds <pid>: the fds the task had at the dump are the same kind of file again
same_fds() {
	local fd bad=""
	for fd in $RENDER_FDS; do
		readlink "/proc/$1/fd/$fd" | grep -q '^/dev/dri/renderD' || bad+=" $fd"
	done
	[ "$(readlink "/proc/$1/fd/$KFD_FD")" = /dev/kfd ] || bad+=" $KFD_FD"
	log "pid $1 after restore: render-node fds: $(fd_numbers "$1" '^/dev/dri/renderD'); /dev/kfd fd: $(fd_numbers "$1" '^/dev/kfd$')"
	[ -z "$bad" ] || log "not what they were at the dump:$bad"
	[ -z "$bad" ]
}

emu_reload preset=2xmi210 || { tap_not_ok "load the emulator (2xmi210)"; tap_done; }
wl_start kfd kfd --render-first --vram-mb 2 --bo-mb 1 || { tap_not_ok "the workload gets ready"; tap_done; }
pid=$WL_PID state=$WL_STATE img=/tmp/img-29
tap_check "--render-first: the render-node fds are below the /dev/kfd fd" render_below_kfd "$pid"
task_snapshot "$pid" "$RESULTS_DIR/kfd.dumped"
tap_dump "criu dump" "$pid" "$img"
tap_image_files "the image has an amdgpu-renderD image per render-node fd" 2 "$img"/amdgpu-renderD-*.img
wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"

emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 render_minor_base=160 ||
	{ tap_not_ok "reload the emulator with gpu_ids 0x0e01,0x0e02"; tap_done; }
tap_restore "criu restore on other gpu_ids" "$img"
first_render=$(grep -n 'amdgpu_plugin: restored amdgpu-renderD-' "$CRIU_LAST_LOG" | head -n1 | cut -d: -f1)
kfd_line=$(grep -n 'amdgpu_plugin: pid [0-9]*: restored amdgpu-kfd-' "$CRIU_LAST_LOG" | head -n1 | cut -d: -f1)
if [ -n "$first_render" ] && [ -n "$kfd_line" ] && [ "$first_render" -lt "$kfd_line" ]; then
	tap_ok "upstream defect §2.5: a render-node file was restored before the kfd file"
else
	tap_not_ok "upstream defect §2.5: a render-node file was restored before the kfd file" \
		"first render-node restore at line ${first_render:-none}, kfd restore at line ${kfd_line:-none}"
fi
tap_log_has "upstream defect §2.5: the early render-node file went to a new GPU" "$CRIU_LAST_LOG" \
	'amdgpu_plugin: restored amdgpu-renderD-[0-9]+\.img: GPU 0x(c1e6|2b8c) -> local 0x0*e0[12]$'
tap_check "fds $RENDER_FDS are render nodes and fd $KFD_FD is /dev/kfd again" same_fds "$pid"
tap_same_bos "every BO at its VA with its handle (emulator view)" "$pid" "$state"
tap_alive_verified "restored render-first" "$pid" "$state"
tap_same_task "restored render-first" "$RESULTS_DIR/kfd.dumped" "$pid"
wl_kill "$pid"
e2e_done
