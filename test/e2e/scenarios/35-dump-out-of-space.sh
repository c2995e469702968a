#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A dump into an image directory that fills up while the plugin writes the GPU pages (a 12 MiB
# tmpfs for 2 x 16 MiB of VRAM): criu dump fails, the plugin's error names the image it could not
# write and says why; the task runs on with its queues resumed and verifies every byte; what was
# written is not taken for a checkpoint: a restore from that directory fails and leaves no task
# and no KFD process. The same dump into a directory with room then succeeds and restores.
# timeout: 300
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

img=/tmp/img-35-small
roomy=/tmp/img-35
if wl_fresh kfd preset=2xmi210 -- --vram-mb 16 --bo-mb 4; then
	rm -rf "$img"
	mkdir -p "$img"
	mount -t tmpfs -o size=12m tmpfs "$img"
	if criu_dump "$pid" "$img" --link-remap; then
		tap_not_ok "kfd: criu dump into a 12 MiB directory fails" "it succeeded"
	else
		tap_ok "kfd: criu dump into a 12 MiB directory fails"
	fi
	tap_log_has "kfd: the plugin names the image it could not write, and why" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: .*image amdgpu-(pages|kfd)-[0-9a-f-]+\\.img.*No space left on device"
	if emu_queues_paused "$pid"; then
		tap_not_ok "kfd: the task's queues are not left paused"
	else
		tap_ok "kfd: the task's queues are not left paused"
	fi
	tap_alive_verified "kfd: after the failed dump" "$pid" "$state"
	log "what the failed dump left: $(ls "$img" | tr '\n' ' ')"

	# The original is the one that lives on: a restore of the failed dump must not bring up a
	# second copy, so take the original out of the way first.
	wl_kill "$pid"
	if ! tap_restore_fails "kfd: a restore from the failed dump's directory fails" "$img"; then
		wl_kill "$pid"
	fi
	tap_no_task "kfd: it leaves no task" "$pid" "$state"
	tap_no_kfd_process "kfd: and no KFD process"
	umount "$img"
fi

if wl_fresh kfd preset=2xmi210 -- --vram-mb 16 --bo-mb 4; then
	tap_dump_gone "kfd: the same dump into a directory with room" "$pid" "$state" "$roomy"
	if wl_restore "$roomy"; then
		tap_ok "kfd: it restores"
		tap_alive_verified "kfd: restored" "$pid" "$state"
		wl_kill "$pid"
	else
		tap_not_ok "kfd: it restores" "$(criu_log_names "$CRIU_LAST_LOG")"
	fi
fi

tap_no_kernel_warnings
e2e_done
