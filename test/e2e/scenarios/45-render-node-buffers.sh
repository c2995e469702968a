#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A process that uses the render node alone (render_workload: libdrm_amdgpu, five GEM buffers of
# 12 MiB in VRAM and GTT, a gap in its handles, one context whose SDMA copies are always in flight,
# no /dev/kfd).
#
# Linux 6.18 and newer (trixie guest) list a file's GEM objects and their GPU mappings: the task is
# checkpointed with its copies in flight, the emulator reloaded with other gpu_ids and render
# minors, and the task restored there with every buffer under its handle at its GPU address
# (verify asks the kernel), every byte back, and new copies completing on its context, whose
# fences go on from where they were; then checkpointed and restored a second time, back on the
# first ids, incrementally: the second dump leaves the objects' memory to a dump with -R just before
# it, and its restore reads it from there. The images of the first round with a bit flipped in the
# render node's pages image are refused by amdgpu-topology --verify and by the restore, naming the
# block, and leave no task. A buffer created VM_ALWAYS_VALID, which the kernel lends to no other
# file, refuses the dump, named, and the task runs on.
#
# Before (bookworm guest, Linux 6.1) nothing tells where the objects are mapped: the dump fails,
# naming the render-node file (pid and fd), the number of buffers, their bytes and handles (found
# by probing), and the task runs on as it was.
# timeout: 300
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

img=/tmp/img-45
emu_reload_or_say "load the emulator" preset=2xmi210 || e2e_done
wl_start render render || { tap_not_ok "render: the workload gets ready"; e2e_done; }
pid=$WL_PID state=$WL_STATE
tap_alive_verified "render: before the dump" "$pid" "$state"
task_snapshot "$pid" "$RESULTS_DIR/render.dumped"
minor=$(sed -n 's/^gpu .* render \([0-9]*\)$/\1/p' "$state")
fd=$(for f in /proc/"$pid"/fd/*; do [ "$(readlink "$f")" = "/dev/dri/renderD$minor" ] && echo "${f##*/}"; done | head -n 1)

if ! uname -r | awk -F. '{ exit !($1 > 6 || ($1 == 6 && $2 >= 18)) }'; then
	if wl_dump "$pid" "$img"; then
		tap_not_ok "render: the dump of a task holding GEM buffers fails on $(uname -r)" \
			"it succeeded: nothing told where they are mapped"
	else
		tap_ok "render: the dump of a task holding GEM buffers fails on $(uname -r)"
	fi
	# five content buffers (12 MiB) and the SDMA command buffer (4 KiB); handle 3 was freed
	tap_log_has "render: the plugin names the file, its buffers, their bytes and handles" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: pid $pid fd $fd, a file of renderD$minor, holds 6 GEM buffer object\\(s\\) of 12587008 bytes \\(handles 1, 2, 4, 5, 6, 7; found by their handles, as this kernel cannot list them\\): a kernel before Linux 6.18 cannot tell where they are mapped"
	tap_image_files "render: no image of the render-node file" 0 "$img"/amdgpu-renderD-*.img
	tap_alive_verified "render: after the refused dump" "$pid" "$state"
	tap_same_task "render: after the refused dump" "$RESULTS_DIR/render.dumped" "$pid"
	wl_kill "$pid"
	e2e_done
fi

TOPOLOGY_TOOL=$VM_REPO/build/bin/amdgpu-topology

# damaged: the images of round 1 with one bit flipped in the middle of the render node's pages
# image are refused by amdgpu-topology --verify and by the restore, naming the block, and leave
# no task (call after the emulator is reloaded)
damaged() {
	local dir=/tmp/img-45-damaged pages
	rm -rf "$dir" && cp -a "$img" "$dir"
	pages=$(cd "$dir" && ls amdgpu-pages-*.img | head -n 1)
	flip_bit "$dir/$pages" $(($(stat -c %s "$dir/$pages") / 2)) || log "cannot flip a bit in $pages"
	"$TOPOLOGY_TOOL" --verify "$dir" >"$RESULTS_DIR/verify-damaged.out" 2>&1
	tap_check "render: amdgpu-topology --verify names the damaged block of $pages" \
		grep -Eq "^amdgpu-renderD-[0-9]+\.img: DAMAGED: image ${pages//./\\.} is damaged: GPU 0x[0-9a-f]+, the BO at 0x" \
		"$RESULTS_DIR/verify-damaged.out"
	tap_restore_fails "render: a bit flipped in $pages: criu restore fails" "$dir"
	tap_log_has "render: a bit flipped in $pages: the plugin names the damage" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: .*image ${pages//./\\.} is damaged: GPU 0x[0-9a-f]+, the BO at 0x[0-9a-f]+, bytes 0x[0-9a-f]+\\.\\.0x[0-9a-f]+"
	tap_no_task "render: a bit flipped in $pages: no task is left" "$pid" "$state"
}

# round <n> <gpu_ids> <minor base> [criu args]: checkpoint the task with its copies in flight,
# reload the emulator as another node, restore it there
round() {
	local n=$1 ids=$2 base=$3
	shift 3
	tap_dump_gone "render $n: criu dump with SDMA copies in flight${*:+ ($*)}" "$pid" "$state" "$img" "$@" || return 1
	tap_log_has "render $n: the render-node file is saved with its objects and context" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: saved amdgpu-renderD-[0-9]+.img: renderD[0-9]+ of GPU 0x[0-9a-f]+, 6 GEM objects \\(6 with their memory here, 12587008 bytes\\), 1 contexts"
	if [ $# -gt 0 ]; then
		tap_log_has "render $n: the dump is incremental, the objects' memory left to the earlier one" \
			"$CRIU_LAST_LOG" "amdgpu_plugin: pid [0-9]+: saved GPU 0x[0-9a-f]+: 12.0 MiB .*, 12.0 MiB unchanged, left to earlier checkpoints"
	fi
	if ! emu_reload preset=2xmi210 gpu_ids="$ids" render_minor_base="$base"; then
		tap_not_ok "render $n: reload the emulator with gpu_ids $ids, render minors from $base"
		return 1
	fi
	[ "$n" != 1 ] || damaged
	tap_restore "render $n: criu restore onto gpu_ids $ids, render minors from $base" "$img" || return 1
	tap_log_has "render $n: the plugin matched the process's GPU without KFD state" "$CRIU_LAST_LOG" \
		"GPU map \\(render-node images -> local\\) 0x[0-9a-f]+->(${ids/,/|})"
	tap_log_has "render $n: every object under its handle, the context at its fences" "$CRIU_LAST_LOG" \
		"6 GEM objects back under their handles \\(1 gaps filled for the moment, 0 KFD buffers imported, 0 KFD buffers' handles left free\\), 1 contexts under their ids \\(0 gaps filled, [1-9][0-9]* empty submissions"
	tap_log_has "render $n: its memory matches the dump's checksums" "$CRIU_LAST_LOG" \
		"and [0-9]+ blocks of GPU memory match their checksums"
	if [ $# -gt 0 ]; then
		tap_log_has "render $n: the restore read the objects' memory from the earlier checkpoint" \
			"$CRIU_LAST_LOG" "amdgpu_plugin: pid [0-9]+: restored GPU 0x[0-9a-f]+: .* MiB read from earlier checkpoints"
	fi
	if grep -q "renderD$base" "/proc/$pid/maps" 2>/dev/null && ! grep -q "renderD$minor\$" "/proc/$pid/maps"; then
		tap_ok "render $n: its buffers are mapped through the new render node"
	else
		tap_not_ok "render $n: its buffers are mapped through the new render node" \
			"$(grep -o 'renderD[0-9]*' "/proc/$pid/maps" 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
	fi
	tap_alive_verified "render $n: restored (handles, GPU addresses, every byte; copies go on)" "$pid" "$state"
	# a task without KFD state knows its GPU by its render node alone: it is now the new one
	local map
	map=$(sed -nE 's/.*GPU map \(render-node images -> local\) (0x[0-9a-f]+)->(0x[0-9a-f]+).*/\1 \2/p' "$CRIU_LAST_LOG" | head -n 1)
	sed "s/GPU ${map% *}\b/GPU ${map#* }/" "$RESULTS_DIR/render.dumped" >"$RESULTS_DIR/render.dumped.$n"
	tap_same_task "render $n: restored" "$RESULTS_DIR/render.dumped.$n" "$pid"
	cp "$RESULTS_DIR/render.dumped.$n" "$RESULTS_DIR/render.dumped"
	minor=$base
}

# round 2 is incremental: a dump with -R first, whose images the second one's point to
round 1 0x1234,0x4321 140 &&
	tap_dump "render 2: criu dump -R (the parent of the next)" "$pid" "$img-pre" -R --track-mem &&
	round 2 0x1002,0x2001 128 --track-mem --prev-images-dir ../img-45-pre
wl_kill "$pid"

# memory no dump can read: a buffer created VM_ALWAYS_VALID, which the kernel lends to no other
# file; the dump is refused, naming it, and the task runs on
wl_start render render-local --always-valid || { tap_not_ok "render --always-valid: the workload gets ready"; e2e_done; }
pid=$WL_PID state=$WL_STATE
task_snapshot "$pid" "$RESULTS_DIR/render-local.dumped"
handle=$(sed -n 's/^gem always-valid handle \([0-9]*\) .*/\1/p' "$state")
if wl_dump "$pid" "$img-local"; then
	tap_not_ok "render --always-valid: the dump fails" "it succeeded: the buffer's memory is in no image"
else
	tap_ok "render --always-valid: the dump fails"
fi
tap_log_has "render --always-valid: the plugin names the buffer it cannot read" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: pid $pid fd [0-9]+, a file of renderD[0-9]+: GEM handle $handle \\(1048576 bytes, creation flags 0x[0-9a-f]+\\) cannot be exported as a dma-buf \\(Operation not permitted\\)"
tap_image_files "render --always-valid: no image of the render-node file" 0 "$img-local"/amdgpu-renderD-*.img
tap_alive_verified "render --always-valid: after the refused dump" "$pid" "$state"
tap_same_task "render --always-valid: after the refused dump" "$RESULTS_DIR/render-local.dumped" "$pid"
wl_kill "$pid"
e2e_done
