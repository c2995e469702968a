#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The fault sweep: every call the plugin makes into the kernel and on the host during a dump and a
# restore of a process on 2 x MI210 with four BOs per GPU, made to fail one occurrence at a time:
#   kernel: each KFD ioctl, each CRIU op, each render-node ioctl (device init, BO import, userptr
#           registration, VA map, command submission, fence wait, ...), failed with EIO by the
#           emulator, which counts them while criu works (debugfs calls; only calls by tasks named
#           criu: criu itself, and a task criu is restoring; and by the restore guard, which copies
#           the restored task's GPU memory after the task went on: a fault there fails the restore
#           at the join, before the task's queues resume);
#   host:   each open, read, write, pread, pwrite, lseek, fstat, ftruncate and close of the
#           plugin's image files
#           (EIO) and each allocation of staging memory (ENOMEM), failed by a preloaded seam that
#           also counts them (test/host-faults/README.md).
# So the number of points grows with the code, not by hand. For each point:
#   dump (-R):  criu fails, or the point is harmless and the dump succeeds (said so); either way the
#               task runs on with its queues not paused and verifies every byte; when criu fails,
#               the plugin's log names what failed and why (the errno's text), criu wrote no
#               inventory (so no restore takes the directory for a checkpoint) and the same dump
#               without the fault then succeeds;
#   restore:    criu fails (or the point is harmless: the task is whole and verifies); no task and
#               no KFD process remain; the plugin's log names what failed; and the same restore
#               without the fault then succeeds, the task verifying.
# The sweep ends with "fault sweep: N points, N clean".
#
# FAULT_SWEEP=full (make check-full) tries every occurrence of every call, and the first of each
# call with other errnos too (kernel: ENOMEM, EINTR; images: ENOSPC, EINTR). By default (make check)
# the first occurrence of each render-node ioctl, of each host call on each kind of image (kfd,
# pages, renderD) and of each staging allocation: a deterministic part of the full sweep. KFD's
# ioctls and CRIU ops are left to the host tests there, which fail each of them in a dump and a
# restore against a fake driver (test/unit/dump_session_test.cpp, restore_session_test.cpp).
# One kind of point is known to stay unnamed: DRM_IOCTL_VERSION failing inside libdrm_amdgpu's own
# device init (amdgpu_device_initialize dereferences the NULL drmGetVersion returns; the plugin asks
# the same question just before, so only the later calls can fail there). criu or the restoring
# task then dies of SIGSEGV inside libdrm: the outcome is safe (checked as for any point), but no
# log can name it. The full sweep counts those apart, by that signature only.
# Beyond one-shot faults: a RESUME that fails on every try (the task must not live on with queues
# that never start: the plugin kills it and the restore fails).
# And a copy engine that never completes: a clear error in seconds, the task running on.
# (make check: about 3 min; FAULT_SWEEP=full: about 25 min)
# timeout: 5400
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

# shellcheck source=test/e2e/sweep-lib.sh
. test/e2e/sweep-lib.sh
img=/tmp/img-95

wl_fresh kfd preset=2xmi210 -- --vram-mb 4 --bo-mb 1 || e2e_done
arm_for_criu

# --- dump ----------------------------------------------------------------------------------------
echo reset >"$EMU_DEBUGFS/calls"
host_seam
tap_dump "kfd: a dump -R to count the calls" "$pid" "$img" -R
dump_calls=$(cat "$EMU_DEBUGFS/calls")
dump_host_calls=$(host_calls_listing)
log "calls during a dump: $(tr '\n' ';' <<<"$dump_calls")"
log "host calls during a dump: $(tr '\n' ';' <<<"$dump_host_calls")"
if seam_saw "$dump_host_calls" open fstat write ftruncate close && grep -q '^pwrite amdgpu-pages-' <<<"$dump_host_calls"; then
	tap_ok "kfd: the host seam sees the dump's image files and staging memory"
else
	tap_not_ok "kfd: the host seam sees the dump's image files and staging memory" "it saw: $dump_host_calls"
fi
while read -r -a point; do
	sweep_dump_point "${point[@]}"
done < <(occurrences "$dump_calls" "$dump_host_calls")
host_seam_off

# --- the engine never completing --------------------------------------------------------------
# 1 MB/s: a chunk takes longer than the plugin's limit for it (2 s plus the chunk at 4 MB/s).
echo 1 >/sys/module/amdgpu/parameters/sdma_mbps
t0=${EPOCHREALTIME/./}
if wl_dump "$pid" "$img" -R; then
	tap_not_ok "kfd: a dump whose copy engine hangs fails" "it succeeded"
else
	tap_ok "kfd: a dump whose copy engine hangs fails"
fi
log "the hung engine became an error after $(((${EPOCHREALTIME/./} - t0) / 1000)) ms (criu's whole run)"
echo 0 >/sys/module/amdgpu/parameters/sdma_mbps
tap_log_has "kfd: the plugin says the engine is taken for hung, and after how long" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: GPU 0x[0-9a-f]+: SDMA submission [0-9]+ did not complete within [0-9.]+ s: the copy engine is taken for hung"
tap_alive_verified "kfd: after the hung engine" "$pid" "$state"

# --- restore -------------------------------------------------------------------------------------
arm_for_criu
tap_dump_gone "kfd: the dump to restore from" "$pid" "$state" "$img"
cp "$RESULTS_DIR/kfd.out" /tmp/img-95-kfd.out
echo reset >"$EMU_DEBUGFS/calls"
host_seam
tap_restore "kfd: a restore to count the calls" "$img"
restore_calls=$(cat "$EMU_DEBUGFS/calls")
restore_host_calls=$(host_calls_listing)
log "calls during a restore: $(tr '\n' ';' <<<"$restore_calls")"
log "host calls during a restore: $(tr '\n' ';' <<<"$restore_host_calls")"
if seam_saw "$restore_host_calls" open fstat read close && grep -q '^pread amdgpu-pages-' <<<"$restore_host_calls"; then
	tap_ok "kfd: the host seam sees the restore's image files and staging memory"
else
	tap_not_ok "kfd: the host seam sees the restore's image files and staging memory" "it saw: $restore_host_calls"
fi
wl_kill "$pid"
while read -r -a point; do
	sweep_restore_point "${point[@]}"
done < <(occurrences "$restore_calls" "$restore_host_calls")
host_seam_off

# --- RESUME fails on every try ------------------------------------------------------------------
cp /tmp/img-95-kfd.out "$RESULTS_DIR/kfd.out"
arm_for_criu
fault "criu 4 1 5"
fault "criu 4 2 5"
fault "criu 4 3 5"
tap_restore_fails "kfd: a restore whose RESUME always fails fails" "$img"
fault clear
tap_log_has "kfd: the plugin says why it killed the task" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: KFD RESUME of pid $pid failed, so its GPU queues would never run again; the task is killed"
tap_no_task "kfd: no task is left" "$pid" "$state"
tap_no_kfd_process "kfd: no KFD process is left"

# --- and without a fault, both work --------------------------------------------------------------
fault clear
cp /tmp/img-95-kfd.out "$RESULTS_DIR/kfd.out"
if wl_restore "$img"; then
	tap_ok "kfd: after the sweep a restore without a fault succeeds"
	tap_alive_verified "kfd: restored after the sweep" "$pid" "$state"
	tap_dump "kfd: and a dump -R of it succeeds" "$pid" "$img-again" -R
	tap_alive_verified "kfd: dumped after the sweep" "$pid" "$state"
	wl_kill "$pid"
else
	tap_not_ok "kfd: after the sweep a restore without a fault succeeds" "$(criu_log_names "$CRIU_LAST_LOG")"
fi

tap_sweep_summary
tap_no_kernel_warnings
e2e_done
