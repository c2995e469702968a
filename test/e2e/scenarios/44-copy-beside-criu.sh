#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The dump's GPU copy beside criu's own work. Where criu calls a hook after its memory dump that can
# still fail the dump (criu 4.3's DUMP_DEVICES_LATE), the copy of a process's GPU memory starts at
# its /dev/kfd file and is joined there; elsewhere it runs in series, and the log says why. Checked
# with kfd_workload on 2 GPUs (32 MiB each, the engines capped at 40 MB/s so that the copy lasts):
#  (a) the default: the plugin's line says the copy ran beside criu (4.3) or in series (older
#      criu), and the image restores, the task verifying;
#  (b) KFD_OVERLAP_COPY=0: in series, because of the setting;
#  (c) criu 4.3: the copy's last SDMA submission fails, after criu went on with its dump: the dump
#      fails at the join, no GPU image is left, and the task runs on and verifies.
# timeout: 300
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

img=/tmp/img-44
beside='amdgpu_plugin: dump: GPU copy [0-9.]+ s beside criu.s own work of [0-9.]+ s: [0-9.]+ s of it hidden, criu waited [0-9.]+ s for the rest'
if dpkg --compare-versions "$(criu_version)" ge 4.3; then late_hook=1; else late_hook=0; fi

wl_fresh kfd preset=2xmi210 -- --vram-mb 32 --bo-mb 4 || e2e_done
echo 40 >/sys/module/amdgpu/parameters/sdma_mbps

# (a)
tap_dump "kfd: criu dump -R" "$pid" "$img" -R
if [ "$late_hook" = 1 ]; then
	tap_log_has "kfd: criu $(criu_version): the GPU copy ran beside criu's dump of host memory" "$CRIU_LAST_LOG" "$beside"
else
	tap_log_has "kfd: criu $(criu_version): the GPU copy ran in series, and the log says why" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: dump: GPU copy [0-9.]+ s in series with criu.s own work \(criu [^ ]+ calls no hook after its memory dump"
fi
tap_alive_verified "kfd: left running" "$pid" "$state"

# (b)
KFD_OVERLAP_COPY=0 tap_dump "kfd: criu dump -R with KFD_OVERLAP_COPY=0" "$pid" "$img" -R
tap_log_has "kfd: KFD_OVERLAP_COPY=0 puts the copy in series" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: dump: GPU copy [0-9.]+ s in series with criu.s own work \(KFD_OVERLAP_COPY=0\)"

# (c)
if [ "$late_hook" = 1 ]; then
	echo "comm criu" >"$EMU_DEBUGFS/fault"
	echo reset >"$EMU_DEBUGFS/calls"
	tap_dump "kfd: criu dump -R to count the copy's SDMA submissions" "$pid" "$img" -R
	submissions=$(awk '$1 == "drm" && $2 == 68 { print $3 }' "$EMU_DEBUGFS/calls")
	log "SDMA submissions (amdgpu CS) of a dump: ${submissions:-none}"
	echo "drm 68 ${submissions:-1} 5" >"$EMU_DEBUGFS/fault"
	if wl_dump "$pid" "$img" -R; then
		tap_not_ok "kfd: a copy that fails beside criu fails the dump" "it succeeded"
	else
		tap_ok "kfd: a copy that fails beside criu fails the dump"
	fi
	echo clear >"$EMU_DEBUGFS/fault"
	tap_log_has "kfd: criu went on with its dump and the copy failed at the join" "$CRIU_LAST_LOG" "$beside"
	tap_log_has "kfd: the plugin names the failed submission" "$CRIU_LAST_LOG" "amdgpu_plugin: .*GPU 0x[0-9a-f]+"
	tap_image_files "kfd: no GPU image is left" 0 "$img"/amdgpu-kfd-*.img "$img"/amdgpu-pages-*.img "$img"/amdgpu-sums-*.img
	tap_beats_advance "kfd: the emulator's heartbeat of its queues advances" "$pid"
	tap_alive_verified "kfd: after the failed copy" "$pid" "$state"
else
	tap_skip "kfd: a copy that fails beside criu fails the dump" "criu $(criu_version) runs the copy in series"
fi

# and a dump with the copy beside criu restores whole
echo 0 >/sys/module/amdgpu/parameters/sdma_mbps
tap_dump_gone "kfd: criu dump" "$pid" "$state" "$img"
tap_restore "kfd: criu restore" "$img"
tap_alive_verified "kfd: restored" "$pid" "$state"
wl_kill "$pid"
e2e_done
