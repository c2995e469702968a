#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Pins upstream plugin defects (Documentation/upstream-compatibility.md §2) that the other scenarios do not name:
#   §2.1  SDMA COPY_LINEAR count: content BOs of 2.5 MiB (one 2 MiB packet and a remainder) restored
#       byte for byte;
#   §2.2, §2.6  multi-GPU BO selection and pages-file offsets: 5 MiB of VRAM on GPU 0, 3 MiB on GPU 1;
#       each pages file holds exactly its GPU's BOs, and GPU 1's come back intact on other ids;
#   §2.4  a restore whose render node is missing fails, naming the path, and leaves nothing behind.
# (§2.3 is 28-recheckpoint-remapped, §2.5 is 29-render-before-kfd.) kfd_workload only: it
# lists every BO with its KFD flags, so the pages files can be checked against it.
# timeout: 180
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

emu_reload preset=2xmi210 || { tap_not_ok "load the emulator (2xmi210)"; tap_done; }
wl_start kfd kfd --vram-mb 5,3 --bo-mb 3 || { tap_not_ok "the workload gets ready"; tap_done; }
pid=$WL_PID state=$WL_STATE img=/tmp/img-31
n=$(awk '$1 == "bo" && $6 ~ /^vram/ && $10 == "0x280000"' "$state" | wc -l)
[ "$n" -eq 2 ] || log "expected two 2.5 MiB VRAM BOs on GPU 0, the state file lists $n"
gpu1=$(state_gpu_ids "$state" | sed -n 2p)

task_snapshot "$pid" "$RESULTS_DIR/kfd.dumped"
tap_dump_gone "criu dump" "$pid" "$state" "$img"
for id in $(state_gpu_ids "$state"); do
	# VRAM (0x1) and GTT (0x2) BOs are the ones whose contents go through the pages files
	want=8
	while read -r _ _ _ gpu _ _ _ _ _ size _ flags _; do
		[ "$gpu" = "$id" ] && ((flags & 3)) && want=$((want + size))
	done < <(grep '^bo ' "$state")
	f=$(ls "$img"/amdgpu-pages-*-"$(printf %04x "$id")".img 2>/dev/null)
	got=$([ -n "$f" ] && stat -c %s "$f")
	if [ "$got" = "$want" ]; then
		tap_ok "upstream defect §2.6: GPU $id's pages file holds exactly its own BOs ($want bytes)"
	else
		tap_not_ok "upstream defect §2.6: GPU $id's pages file holds exactly its own BOs ($want bytes)" \
			"${f:-no pages file}: ${got:-?} bytes"
	fi
done

emu_reload preset=2xmi210 gpu_ids=0x0d01,0x0d02 render_minor_base=170 ||
	{ tap_not_ok "reload the emulator with gpu_ids 0x0d01,0x0d02"; tap_done; }
minor=$(emu_node_prop "$(emu_gpu_nodes | sed -n 2p)" drm_render_minor)
node=/dev/dri/renderD$minor
if rm "$node"; then
	if wl_restore "$img"; then
		tap_not_ok "upstream defect §2.4: restore with $node missing fails" "it succeeded"
		wl_kill "$pid"
	else
		tap_ok "upstream defect §2.4: restore with $node missing fails"
	fi
	tap_log_has "upstream defect §2.4: the error names GPU 0x0d02, $node and its device number" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: .*lacks: 0x0d02 \\($node, device 226:$minor, the image's GPU "
	tap_no_task "upstream defect §2.4: no task is left" "$pid" "$state"
	tap_no_kfd_process "upstream defect §2.4: no KFD process is left in the emulator"
	mknod -m 666 "$node" c 226 "$minor" || log "cannot recreate $node"
else
	tap_not_ok "remove $node"
fi

tap_restore "restore on gpu_ids 0x0d01,0x0d02" "$img"
line=$(wl_ask "$pid" "$state" verify)
bad=$(grep -i 'size 0x280000' "$state.verify" 2>/dev/null | head -n 3)
if [ -s "$state.verify" ] && [ -z "$bad" ]; then
	tap_ok "upstream defect §2.1: every byte of the 2.5 MiB BOs (2 MiB packet + 0.5 MiB) is back"
else
	tap_not_ok "upstream defect §2.1: every byte of the 2.5 MiB BOs (2 MiB packet + 0.5 MiB) is back" "${bad:-$line}"
fi
bad=$(grep -i "gpu $gpu1" "$state.verify" 2>/dev/null | head -n 3)
if [ -s "$state.verify" ] && [ -z "$bad" ]; then
	tap_ok "upstream defect §2.2: every byte of GPU 1's BOs (pages file of its own, after GPU 0's 5 MiB) is back"
else
	tap_not_ok "upstream defect §2.2: every byte of GPU 1's BOs (pages file of its own, after GPU 0's 5 MiB) is back" \
		"${bad:-$line}"
fi
tap_alive_verified "restored on other ids" "$pid" "$state"
tap_same_task "restored on other ids" "$RESULTS_DIR/kfd.dumped" "$pid"
wl_kill "$pid"
e2e_done
