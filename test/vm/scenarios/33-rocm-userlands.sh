#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# ROCm userlands newer than the guest's own, as Debian ships them (test/vm/rocm-root.sh), run as
# bare processes chrooted into their root against the emulator on 2xmi210 (trixie guest only):
# ROCm 6.4.3 (sid) and 7.2.4 (experimental). The root sees the guest's /dev (so /dev/kfd and
# /dev/dri), /proc, /sys and /tmp, and the checkout at its own path, in a mount namespace of each
# run's own. Our programs are built in that root against its ROCm (test/vm/rocm-build.sh):
#   - rocminfo lists one agent per emulated GPU;
#   - rocr_client's host<->VRAM and VRAM<->VRAM copies verify; at 16 MiB each copy is one SDMA
#     packet on gfx90a for ROCr 6.x, whose count field is wider than 4 MiB;
#   - hip_client's host API works; HIP 6.4.3's hipMemcpy host->device->host runs on the SDMA
#     engines and brings every byte back (before it, HIP's code-object load puts ROCr's PM4
#     cache-invalidation packet on the queue, which must not stop it as a malformed packet);
#     HIP 7.2.4 moves the device->host half with its copy kernel instead (on gfx90a ROCr refuses
#     that direction on the SDMA engine the stream took for host->device), on the shader core:
#     every byte must come back, or hip_client reports that half as a skip naming the kernel
#     (an instruction the core does not execute) and checks that a device->host copy made first
#     runs on the SDMA engine;
#   - the kernel log's only AQL errors are illegal instructions (rocr_client's MFMA kernel, a
#     HIP kernel hip_client skipped) and rocr_client's unmapped kernel descriptor, and no SDMA
#     queue faults;
#   - rocr_workload's first full verification passes;
#   - hip_workload (HIP's host API: hipMalloc'd buffers filled and read back with hipMemcpyAsync,
#     a hipHostMalloc'd buffer, a thread per GPU doing host->device->host round trips; every copy
#     on a stream of its GPU and direction) sets up with --vram-mb 2, its first full verification
#     and a heartbeat check pass (the time each takes is printed), it ends cleanly on SIGTERM, its
#     copies ran on each GPU's SDMA engine, and the kernel log has no AQL error from it (it runs no
#     kernel).
# timeout: 600
. test/vm/lib.sh
# shellcheck source=test/e2e/lib/workloads.sh
. test/e2e/lib/workloads.sh

[ "${VM_GUEST:-bookworm}" = trixie ] || { echo "ROCm userland roots run in the trixie guest"; exit 77; }
emu_require test/emu/clients/rocr_client

engines=/sys/kernel/debug/amdgpu_emu/engines
mib=16
preset=2xmi210
cus=104
hip_mib=2
tmp=/tmp/33-rocm-userlands
mkdir -p "$tmp"

# in_root <root> <cmd...>: runs cmd chrooted into root, which sees the guest's /dev, /proc, /sys,
# /tmp and the checkout, in a mount namespace of its own (nothing stays mounted).
in_root() {
	unshare --mount --propagation private -- sh -ec '
		root=$1 repo=$2
		shift 2
		mount --rbind /dev "$root/dev"
		mount -t proc proc "$root/proc"
		mount --rbind /sys "$root/sys"
		mount --bind /tmp "$root/tmp"
		mkdir -p "$root$repo"
		mount --bind "$repo" "$root$repo"
		cd "$repo"
		exec chroot "$root" sh -c "cd \"\$0\" && exec \"\$@\"" "$repo" "$@"
	' sh "$@"
}

# root_workload <version> <w> [options...]: test/e2e's <w>_workload as built in the ROCm root,
# chrooted into it in the background (root_pid); waits up to 120 s for its READY line. Sets pid and
# state ($tmp/<w>-<version>, its output in $state.out); false if it never got ready.
root_workload() {
	local version=$1 w=$2
	shift 2
	state=$tmp/$w-$version
	rm -f "$state" "$state".*
	in_root "$root" "$PWD" "$bin/e2e/bin/${w}_workload" --state "$state" "$@" >"$state.out" 2>&1 &
	root_pid=$!
	wait_for "grep -q '^READY [0-9]*\$' '$state.out' || ! kill -0 $root_pid 2>/dev/null" 120 &&
		pid=$(sed -n 's/^READY //p' "$state.out" | head -n1) && [ -n "$pid" ]
}

# secs <microseconds>: the same in seconds, to the millisecond
secs() {
	printf '%d.%03d' $(($1 / 1000000)) $(($1 / 1000 % 1000))
}

dmesg_mark "33-rocm-userlands: begin"
for version in 6.4 7.2; do
	root=$PWD/build/vm/rocm-$version/root
	bin=build/vm/rocm-$version/src/test
	if [ ! -e "$root/.testbed-root" ] || [ ! -x "$bin/emu/clients/rocr_client" ]; then
		tap_skip "ROCm $version" "its root or programs are not built (test/vm/rocm-build.sh $version)"
		continue
	fi
	rocr=$(sed -n 's/^libhsa-runtime64-1 //p' "$root/.testbed-versions")
	if ! emu_reload preset="$preset"; then
		tap_not_ok "ROCm $version: $preset: load"
		continue
	fi
	n=$(grep -c . "$engines")
	tag="ROCm $version ($rocr): $preset"
	got=$(in_root "$root" "$PWD" timeout 120 rocminfo 2>&1 | grep -cE '^  Name: +gfx[0-9a-f]+ *$')
	if [ "$got" = "$n" ]; then
		tap_ok "$tag: rocminfo lists the $n GPU agents"
	else
		tap_not_ok "$tag: rocminfo lists the $n GPU agents" \
			"it lists $got: $(in_root "$root" "$PWD" timeout 60 rocminfo 2>&1 | tail -n3 | tr '\n' ';')"
	fi

	dmesg_mark "33-rocm-userlands: $version rocr"
	before=$(sdma_engine_bytes)
	tap_relay "$tag" in_root "$root" "$PWD" timeout 300 "$bin/emu/clients/rocr_client" --mib "$mib"
	tap_sdma_moved "$tag: every GPU's SDMA engine moved the copies" "$before" $((2 * mib * 1048576))

	dmesg_mark "33-rocm-userlands: $version hip"
	if [ -x "$bin/emu/clients/hip_client" ]; then
		tap_relay "$tag: HIP" in_root "$root" "$PWD" timeout 300 "$bin/emu/clients/hip_client" --cus "$cus"
	else
		tap_skip "$tag: HIP's host API" "no hip_client built"
	fi
	# Every AQL error the queues reported since the ROCr client began: illegal instructions
	# (rocr_client's MFMA kernel; a kernel of HIP's the shader core stops, which hip_client skips)
	# and rocr_client's unmapped kernel descriptor. No packet the processor rejects, no wave that
	# faults on memory.
	other=$(dmesg | sed -n "/33-rocm-userlands: $version rocr\$/,\$p" | grep '\[aql\]' |
		grep -v 'queue error 0x40000000, the queue stops' |
		grep -v 'kernel descriptor not readable at 0x1000 (packet [0-9]*); queue error 0x20000000,')
	if [ -z "$other" ]; then
		tap_ok "$tag: the only AQL errors are illegal instructions and the client's unmapped kernel descriptor"
	else
		tap_not_ok "$tag: the only AQL errors are illegal instructions and the client's unmapped kernel descriptor" \
			"$(head -n4 <<<"$other")"
	fi

	if [ -x "$bin/e2e/bin/rocr_workload" ]; then
		if root_workload "$version" rocr; then
			if [ "$(wl_ask "$pid" "$state" verify 60)" = "VERIFY OK" ]; then
				tap_ok "$tag: rocr_workload's first full verification passes"
			else
				tap_not_ok "$tag: rocr_workload's first full verification passes" \
					"$(head -n2 "$state.verify" 2>/dev/null | tr '\n' ';') $(tail -n3 "$state.out" | tr '\n' ';')"
			fi
			kill -TERM "$pid" 2>/dev/null
		else
			tap_not_ok "$tag: rocr_workload sets up" "$(tail -n3 "$state.out" | tr '\n' ';')"
			pkill -KILL -f -- "--state $state"
		fi
		wait
	fi

	if [ -x "$bin/e2e/bin/hip_workload" ]; then
		dmesg_mark "33-rocm-userlands: $version hip_workload"
		before=$(sdma_engine_bytes)
		t0=${EPOCHREALTIME/./}
		if root_workload "$version" hip --vram-mb "$hip_mib"; then
			t1=${EPOCHREALTIME/./}
			tap_verify "$tag: hip_workload's first full verification passes" "$pid" "$state" 60
			t2=${EPOCHREALTIME/./}
			tap_heartbeat "$tag: hip_workload's round trips run on (heartbeat)" "$pid" "$state" 60
			log "hip_workload --vram-mb $hip_mib: ready in $(secs $((t1 - t0))) s (its own count: $(
				sed -n 's/^# set up //p' "$state.out")), first verification in $(secs $((t2 - t1))) s"
			kill -TERM "$pid" 2>/dev/null
			if wait_for "! kill -0 $pid 2>/dev/null" 30 && wait "$root_pid" && grep -qx EXIT "$state.out"; then
				tap_ok "$tag: hip_workload frees everything and exits 0 on SIGTERM"
			else
				tap_not_ok "$tag: hip_workload frees everything and exits 0 on SIGTERM" \
					"$(ps -o pid=,stat=,args= -p "$pid") $(tail -n3 "$state.out" | tr '\n' ';')"
				kill -KILL "$pid" 2>/dev/null
			fi
		else
			tap_not_ok "$tag: hip_workload sets up" "$(tail -n3 "$state.out" | tr '\n' ';')"
			pkill -KILL -f -- "--state $state"
		fi
		wait
		# its set-up fill and the verification's read-back alone are twice its VRAM per GPU
		tap_sdma_moved "$tag: hip_workload's copies ran on every GPU's SDMA engine" "$before" $((2 * hip_mib * 1048576))
		aql=$(dmesg | sed -n "/33-rocm-userlands: $version hip_workload\$/,\$p" | grep '\[aql\]')
		if [ -z "$aql" ]; then
			tap_ok "$tag: the kernel log has no AQL error from hip_workload"
		else
			tap_not_ok "$tag: the kernel log has no AQL error from hip_workload" "$(head -n4 <<<"$aql")"
		fi
	fi
	emu_unload || tap_not_ok "$tag: unload after the runtime"
done

tap_dmesg_clean "33-rocm-userlands: begin"
if dmesg | sed -n '/33-rocm-userlands: begin$/,$p' | grep -q '\[sdma\]'; then
	tap_not_ok "no SDMA queue faulted" "$(dmesg | grep '\[sdma\]' | head -n3)"
else
	tap_ok "no SDMA queue faulted"
fi
tap_done
