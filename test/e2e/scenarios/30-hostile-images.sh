#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Hostile images and settings: one kfd_workload image, restored from damaged copies — a truncated
# amdgpu-pages file, a pages file with trailing garbage, an amdgpu-kfd image of garbage (whole file,
# and a valid size header over a garbage payload, which its checksum refuses, or without the
# checksums image the decoder) — and with KFD_MAX_BUFFER_SIZE=banana. Each
# restore fails (non-zero status) with a plugin error naming the file or variable, and leaves no
# task and no KFD process. Last, the undamaged image restores and verifies, so the failures were
# the damage's. kfd_workload only: the image format does not depend on the workload.
# timeout: 180
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

emu_reload preset=2xmi210 || { tap_not_ok "load the emulator (2xmi210)"; tap_done; }
wl_start kfd kfd --vram-mb 2 --bo-mb 1 || { tap_not_ok "the workload gets ready"; tap_done; }
pid=$WL_PID state=$WL_STATE img=/tmp/img-30
tap_dump_gone "criu dump" "$pid" "$state" "$img"
pages=$(cd "$img" && ls amdgpu-pages-*.img | head -n1)
kfd=$(cd "$img" && ls amdgpu-kfd-*.img | head -n1)
[ -n "$pages" ] && [ -n "$kfd" ] || log "the image lacks amdgpu-pages or amdgpu-kfd files"

# hostile <what> <ERE the log must match> <damage command...> (run in a copy of the image)
hostile() {
	local what=$1 re=$2 copy=/tmp/img-30-damaged
	shift 2
	rm -rf "$copy"
	cp -a "$img" "$copy"
	(cd "$copy" && "$@") || log "damaging the copy failed: $*"
	tap_restore_fails "$what: criu restore fails" "$copy"
	tap_log_has "$what: the plugin's error names it" "$CRIU_LAST_LOG" "amdgpu_plugin: .*$re"
	tap_no_task "$what: no task is left" "$pid" "$state"
	tap_no_kfd_process "$what: no KFD process is left in the emulator"
}

garbage() { yes garbage | head -c "$1"; }
truncate_pages() { truncate -s -4096 "$pages"; }
append_garbage() { garbage 100 >>"$pages"; }
garbage_kfd() { garbage 4096 >"$kfd"; }
garbage_kfd_payload() {
	local size
	size=$(($(stat -c %s "$kfd") - 8))
	{ head -c 8 "$kfd"; garbage "$size"; } >"$kfd.new" && mv "$kfd.new" "$kfd"
}

hostile "truncated $pages" "image ${pages//./\\.} is truncated" truncate_pages
hostile "$pages with trailing garbage" "image ${pages//./\\.} has 100 bytes after its announced" append_garbage
hostile "$kfd of garbage" "image ${kfd//./\\.} announces [0-9]+ payload bytes" garbage_kfd
hostile "$kfd with a garbage payload" "image ${kfd//./\\.} is damaged: its [0-9]+ payload bytes hash to" garbage_kfd_payload
# without the checksums (as upstream's plugin writes images) the decoder is the one that refuses it
garbage_kfd_payload_unsummed() { garbage_kfd_payload && rm -f amdgpu-sums-*.img; }
hostile "$kfd with a garbage payload and no checksums" "image ${kfd//./\\.} is not a valid criu_kfd message" \
	garbage_kfd_payload_unsummed
KFD_MAX_BUFFER_SIZE=banana hostile "KFD_MAX_BUFFER_SIZE=banana" "KFD_MAX_BUFFER_SIZE='banana' is not a size" true

tap_restore "the undamaged image restores" "$img"
tap_alive_verified "restored from the undamaged image" "$pid" "$state"
wl_kill "$pid"
e2e_done
