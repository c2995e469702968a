#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A damaged image is never restored silently. One kfd_workload checkpoint (2 x MI210, 4 MiB of
# VRAM per GPU, a quarter of it zeros), then one bit flipped in the middle of each kind of image,
# each in a copy of the images:
#  - a pages image: the restore fails, the plugin naming the image, the GPU, the BO's address and
#    the damaged bytes; no task and no KFD process is left;
#  - the kfd image's payload: refused the same way, naming the image, before KFD restores anything;
#  - a stream (criu --stream, a bit flipped in the captured stream where it carries a pages image):
#    refused the same way.
# amdgpu-topology --verify finds the intact images intact and names the damaged block offline.
# The intact images and the intact stream restore onto other gpu_ids and verify, so the refusals
# were the damage's; dumped again without its sums image (as upstream's plugin writes images), the
# task restores, unverified, saying so.
# timeout: 300
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

TOPOLOGY_TOOL=$VM_REPO/build/bin/amdgpu-topology

# refused <what> <ERE the plugin's error must match> <images dir>: a restore that must fail.
refused() {
	local what=$1 re=$2 dir=$3
	tap_restore_fails "$what: criu restore fails" "$dir"
	tap_log_has "$what: the plugin names the damage" "$CRIU_LAST_LOG" "amdgpu_plugin: .*$re"
	tap_no_task "$what: no task is left" "$pid" "$state"
	tap_no_kfd_process "$what: no KFD process is left in the emulator"
}

wl_fresh kfd preset=2xmi210 -- --vram-mb 4 --bo-mb 1 --zeros 25 || e2e_done
img=/tmp/img-37
task_snapshot "$pid" "$RESULTS_DIR/37.dumped"
tap_dump_gone "criu dump" "$pid" "$state" "$img"
sums=$(cd "$img" && ls amdgpu-sums-*.img 2>/dev/null | head -n1)
tap_check "the dump wrote the checksums beside the GPU images (${sums:-none})" test -n "$sums"
"$TOPOLOGY_TOOL" --verify "$img" >"$RESULTS_DIR/verify-intact.out" 2>&1
rc=$?
tap_check "amdgpu-topology --verify: the images are intact (exit $rc)" \
	grep -Eq '^amdgpu-kfd-[0-9]+\.img: intact \(the kfd image and [0-9]+ blocks' "$RESULTS_DIR/verify-intact.out"

# a pages image, one bit in the middle of its payload
pages=$(cd "$img" && ls amdgpu-pages-*.img | tail -n1)
damaged=/tmp/img-37-pages
rm -rf "$damaged" && cp -a "$img" "$damaged"
flip_bit "$damaged/$pages" $(($(stat -c %s "$damaged/$pages") / 2)) || log "cannot flip a bit in $pages"
"$TOPOLOGY_TOOL" --verify "$damaged" >"$RESULTS_DIR/verify-damaged.out" 2>&1
rc=$?
tap_check "amdgpu-topology --verify names the damaged block in $pages (exit $rc)" \
	grep -Eq "DAMAGED: image ${pages//./\\.} is damaged: GPU 0x[0-9a-f]+, the BO at 0x[0-9a-f]+, bytes" \
	"$RESULTS_DIR/verify-damaged.out"
refused "a bit flipped in $pages" \
	"image ${pages//./\\.} is damaged: GPU 0x[0-9a-f]+, the BO at 0x[0-9a-f]+, bytes 0x[0-9a-f]+\.\.0x[0-9a-f]+ \(block [0-9]+ of [0-9]+\)" \
	"$damaged"

# the kfd image, one bit in the middle of its payload
kfd=$(cd "$img" && ls amdgpu-kfd-*.img | head -n1)
damaged=/tmp/img-37-kfd
rm -rf "$damaged" && cp -a "$img" "$damaged"
flip_bit "$damaged/$kfd" $(($(stat -c %s "$damaged/$kfd") / 2)) || log "cannot flip a bit in $kfd"
refused "a bit flipped in $kfd" "image ${kfd//./\\.} is damaged: its [0-9]+ payload bytes hash to" "$damaged"

emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 render_minor_base=160 ||
	tap_not_ok "reload the emulator with other gpu_ids"
tap_restore "the intact images restore onto other gpu_ids" "$img"
tap_same_task "restored from the intact images" "$RESULTS_DIR/37.dumped" "$pid"
tap_alive_verified "restored from the intact images" "$pid" "$state"

# dumped again, then without the sums image, as upstream's plugin writes images: restored,
# unverified, saying so (a new dump: the task's output file has grown since the first)
unsummed=/tmp/img-37-unsummed
tap_dump_gone "dumped again" "$pid" "$state" "$unsummed"
rm -f "$unsummed"/amdgpu-sums-*.img
tap_restore "images without checksums (as upstream's plugin writes them) restore" "$unsummed"
tap_log_has "the plugin says they were restored unverified" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: pid [0-9]+: the images have no amdgpu-sums-[0-9]+\.img .*restored unverified"
tap_alive_verified "restored from images without checksums" "$pid" "$state"
wl_kill "$pid"

# A stream: the stand-in's stream file carries each image as records (u32 name length, name, u64
# size, bytes; an image's first record is empty). One bit is flipped in the middle of the first
# record of a pages image that carries at least 4 KiB of it.
wl_fresh kfd preset=2xmi210 -- --vram-mb 4 --bo-mb 1 --zeros 25 || e2e_done
img=/tmp/img-37-stream stream=/tmp/stream-37
stream_dump "stream" "$pid" "$img" "$stream"
wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
cp "$stream" "$stream.intact"
name=$(grep -aoE 'amdgpu-pages-[0-9]+-[0-9a-f]{4}\.img' "$stream" | head -n1)
flipped=
for record in $(grep -aboF "$name" "$stream" | cut -d: -f1); do
	data=$((record + ${#name} + 8))
	size=$(od -An -tu8 -j $((data - 8)) -N8 "$stream" | tr -d ' ')
	if [ "${size:-0}" -ge 4096 ]; then
		flip_bit "$stream" $((data + size / 2)) && flipped=$((data + size / 2))
		break
	fi
done
[ -n "$flipped" ] || log "no data record of ${name:-a pages image} in the stream to flip a bit in"
stream_restore "$img" "$stream"
rc=$?
tap_check "a bit flipped in the stream's $name: criu restore --stream fails" test "$rc" -ne 0
tap_log_has "a bit flipped in the stream's $name: the plugin names the damage" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: .*image ${name//./\\.} is damaged: GPU 0x[0-9a-f]+, the BO at 0x[0-9a-f]+, bytes"
tap_no_task "a bit flipped in the stream: no task is left" "$pid" "$state"
tap_no_kfd_process "a bit flipped in the stream: no KFD process is left in the emulator"
if stream_restore "$img" "$stream.intact"; then
	tap_ok "the intact stream restores"
else
	tap_not_ok "the intact stream restores" "$(criu_log_names "$CRIU_LAST_LOG")"
fi
tap_alive_verified "restored from the intact stream" "$pid" "$state"
wl_kill "$pid"
e2e_done
