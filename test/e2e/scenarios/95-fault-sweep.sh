#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The fault sweep: every call the plugin makes into the kernel and on the host during a dump and a
# restore of a process on 2 x MI210 with four BOs per GPU, made to fail one occurrence at a time:
#   kernel: each KFD ioctl, each CRIU op, each render-node ioctl (device init, BO import, userptr
#           registration, VA map, command submission, fence wait, ...), failed with EIO by the
#           emulator, which counts them while criu works (debugfs calls; only calls by tasks named
#           criu: criu itself, and a task criu is restoring);
#   host:   each open, read, write, lseek, fstat, ftruncate and close of the plugin's image files
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
# every occurrence of every KFD ioctl and CRIU op, and the first occurrence of each render-node
# ioctl, of each host call on each kind of image (kfd, pages, renderD) and of each staging
# allocation: a deterministic part of the full sweep.
# One kind of point is known to stay unnamed: DRM_IOCTL_VERSION failing inside libdrm_amdgpu's own
# device init (amdgpu_device_initialize dereferences the NULL drmGetVersion returns; the plugin asks
# the same question just before, so only the later calls can fail there). criu or the restoring
# task then dies of SIGSEGV inside libdrm: the outcome is safe (checked as for any point), but no
# log can name it. The full sweep counts those apart, by that signature only.
# Beyond one-shot faults: a RESUME that fails on every try (the task must not live on with queues
# that never start: the plugin kills it and the restore fails).
# And a copy engine that never completes: a clear error in seconds, the task running on.
# (make check: about 4 min; FAULT_SWEEP=full: about 25 min)
# timeout: 5400
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_require
scenario_warnings_begin

sweep=${FAULT_SWEEP:-part}
img=/tmp/img-95
HOST_FAULTS=$VM_REPO/build/test/libhost-faults.so
HOST_CALLS=/tmp/host-calls-95 # a local filesystem: the seam maps its counts shared
points=0 clean=0 in_libdrm=0 unreached=0

fault() { echo "$1" >"$EMU_DEBUGFS/fault"; }
arm_for_criu() {
	fault clear
	fault "comm criu"
}

# criu runs with the host seam preloaded (test/vm/lib.sh's CRIU_ENV), counting from zero; a host
# fault, if one is given ("call what nth errno"), armed.
host_seam() {
	rm -f "$HOST_CALLS" "$HOST_CALLS.count"
	CRIU_ENV=("LD_PRELOAD=$HOST_FAULTS" "AMDGPU_HOST_CALLS=$HOST_CALLS")
	[ -z "${1:-}" ] || CRIU_ENV+=("AMDGPU_HOST_FAULT=$1")
}
host_seam_off() { CRIU_ENV=(); }

# host_calls_listing: "call what count" per host call seen since host_seam, in first-seen order
host_calls_listing() {
	grep -v '^fired ' "$HOST_CALLS" 2>/dev/null |
		awk '{ k = $1 " " $2; if (!(k in c)) o[n++] = k; c[k]++ } END { for (i = 0; i < n; i++) print o[i], c[o[i]] }'
}

# The errnos the sweep injects, and the text the plugin's log must then hold.
declare -A ERRNO_NAME=([4]=EINTR [5]=EIO [12]=ENOMEM [28]=ENOSPC)
declare -A ERRNO_TEXT_OF=([4]="Interrupted system call" [5]="Input/output error" [12]="Cannot allocate memory"
	[28]="No space left on device")

# occurrences <kernel calls listing> <host calls listing>: one line per point the sweep tries,
# "kernel <kind> <nr> <nth> <errno>" or "host <call> <what> <nth> <errno>". Each point fails with
# EIO (ENOMEM for an allocation); the full sweep also fails the first occurrence of each kernel
# call with ENOMEM and EINTR (which the plugin and libdrm retry) and of each image call with ENOSPC
# and EINTR. (Not EINVAL: KFD means by it a request that does not fit the process's state, such as
# UNPAUSE of queues that are not paused; injected while the state does fit, it tells nothing.)
occurrences() {
	local kind nr count nth
	while read -r kind nr count; do
		[ -n "$kind" ] || continue
		if [ "$sweep" = full ] || [ "$kind" != drm ]; then
			for ((nth = 1; nth <= count; nth++)); do echo "kernel $kind $nr $nth 5"; done
		else
			echo "kernel $kind $nr 1 5"
		fi
	done <<<"$1"
	local call what seen=" " err
	while read -r call what count; do
		[ -n "$call" ] || continue
		err=5
		[ "$what" != staging ] || err=12
		if [ "$sweep" = full ]; then
			for ((nth = 1; nth <= count; nth++)); do echo "host $call $what $nth $err"; done
		else
			# the first call of each kind on each kind of image (amdgpu-pages-*, ...)
			local kind="$call ${what%%\**}"
			[[ "$seen" != *" $kind;"* ]] || continue
			seen+="$kind; "
			echo "host $call $what 1 $err"
		fi
	done <<<"$2"
	# staging memory falls back to posix_memalign only when libnuma's allocation fails: both fail
	! grep -q "^numa_alloc_onnode staging" <<<"$2" || echo "host numa_alloc_onnode+posix_memalign staging 1 12"
	[ "$sweep" = full ] || return 0
	while read -r kind nr count; do
		[ -n "$kind" ] || continue
		for err in 12 4; do echo "kernel $kind $nr 1 $err"; done
	done <<<"$1"
	while read -r call what count; do
		[ -n "$call" ] && [ "$what" != staging ] || continue
		for err in 28 4; do echo "host $call $what 1 $err"; done
	done <<<"$2"
}

# point_name <dump|restore> <point...>
point_name() {
	local name="$1, $3 $4 #$5 fails"
	[ "$6" = 5 ] || [ "$4" = staging ] || name+=" with ${ERRNO_NAME[$6]}"
	echo "$name"
}

# arm_point <point...>: the fault of the point, for the next criu run; sets ERRNO_TEXT to what the
# plugin's log must say
arm_point() {
	arm_for_criu
	echo reset >"$EMU_DEBUGFS/calls"
	if [ "$1" = kernel ]; then
		host_seam
		fault "$2 $3 $4 $5"
	else
		# (calls joined by "+": each of them fails)
		local call specs=()
		for call in ${2//+/ }; do specs+=("$call $3 $4 $5"); done
		host_seam "$(IFS=';'; echo "${specs[*]}")"
	fi
	ERRNO_TEXT=${ERRNO_TEXT_OF[$5]}
}

# disarm_point <point...>: clears the fault; false (with WHY_NOT) if it never fired (the emulator
# still lists an armed kernel fault; the seam did not say "fired"). A fault that did not fire
# because this run made fewer such calls than the counting run (fence waits poll as long as the
# engine takes) sets UNREACHED instead: the point was not tried.
disarm_point() {
	WHY_NOT= UNREACHED=
	local made
	if [ "$1" = kernel ]; then
		if grep -q "^$2 $3 " "$EMU_DEBUGFS/fault"; then
			made=$(awk -v k="$2" -v n="$3" '$1 == k && $2 == n { print $3 }' "$EMU_DEBUGFS/calls")
			if [ "${made:-0}" -lt "$4" ]; then
				UNREACHED="this run made ${made:-0} such calls"
			else
				WHY_NOT="the emulator never failed $2 $3 #$4 (this run made $made such calls)"
			fi
		fi
	else
		local call
		for call in ${2//+/ }; do
			grep -qxF "fired $call $3 $4" "$HOST_CALLS" 2>/dev/null && continue
			made=$(grep -cxF "$call $3" "$HOST_CALLS" 2>/dev/null)
			if [ "${made:-0}" -lt "$4" ]; then
				UNREACHED="this run made ${made:-0} such calls"
			else
				WHY_NOT="the seam never failed $call $3 #$4 (this run made $made such calls)"
			fi
		done
	fi
	fault clear
	[ -z "$WHY_NOT" ]
}

# seam_saw <listing> <calls...>: the listing has each call on each kind of image, and staging
seam_saw() {
	local listing=$1 call kind
	shift
	grep -q "staging" <<<"$listing" || return 1
	for call; do
		for kind in kfd pages renderD; do
			grep -q "^$call amdgpu-$kind-" <<<"$listing" || return 1
		done
	done
}

# plugin_named_failure <log>: the plugin logged an error naming the failed call's errno
plugin_named_failure() {
	grep -q "amdgpu_plugin: .*$ERRNO_TEXT" "$1" 2>/dev/null
}

# in_libdrm_init <criu status> <log> <point...>: the known unnamed kind (see the top): a
# DRM_IOCTL_VERSION point and criu (status 139) or the restoring task killed by SIGSEGV
in_libdrm_init() {
	local status=$1 log=$2
	shift 2
	[ "$1 $2 $3" = "kernel drm 0" ] || return 1
	[ "$status" = 139 ] || grep -q "signal 11" "$log" 2>/dev/null
}

# point_result <name> <why> [libdrm]: one TAP line; an empty why is clean
point_result() {
	local name=$1 why=$2
	points=$((points + 1))
	if [ -n "$UNREACHED" ] && [ -z "$why" ]; then
		unreached=$((unreached + 1))
		tap_ok "$name: not reached ($UNREACHED)"
	elif [ -z "$why" ]; then
		clean=$((clean + 1))
		tap_ok "$name"
	elif [ "${3:-}" = libdrm ] && [ "$why" = unnamed ]; then
		in_libdrm=$((in_libdrm + 1))
		tap_ok "$name (inside libdrm_amdgpu's device init: safe, unnamed)"
	else
		tap_not_ok "$name" "$why"
	fi
}

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
if seam_saw "$dump_host_calls" open fstat write ftruncate close; then
	tap_ok "kfd: the host seam sees the dump's image files and staging memory"
else
	tap_not_ok "kfd: the host seam sees the dump's image files and staging memory" "it saw: $dump_host_calls"
fi
while read -r -a point; do
	name=$(point_name dump "${point[@]}")
	arm_point "${point[@]}"
	why= libdrm=
	wl_dump "$pid" "$img" -R
	status=$?
	disarm_point "${point[@]}" || why=$WHY_NOT
	if [ "$status" = 0 ]; then
		outcome="harmless: the dump succeeded"
	else
		outcome="criu dump failed"
		if ! plugin_named_failure "$CRIU_LAST_LOG"; then
			if in_libdrm_init "$status" "$CRIU_LAST_LOG" "${point[@]}"; then
				libdrm=libdrm
				why=unnamed
			else
				why="${why:+$why; }the plugin's log does not name the failure ($(grep -c amdgpu_plugin "$CRIU_LAST_LOG") plugin lines)"
			fi
		fi
		[ ! -e "$img/inventory.img" ] ||
			why="${why:+$why; }criu wrote inventory.img: the directory would pass for a checkpoint"
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		why="${why:+$why; }the task is gone"
	else
		! emu_queues_paused "$pid" || why="${why:+$why; }its queues stay paused"
		# (the workload's verification includes its queues' heartbeat)
		v=$(wl_ask "$pid" "$state" verify)
		[ "$v" = "VERIFY OK" ] || why="${why:+$why; }$v"
		if [ "$status" != 0 ]; then
			host_seam
			wl_dump "$pid" "$img" -R || why="${why:+$why; }the dump without the fault failed too"
		fi
	fi
	point_result "$name: $outcome; the task runs on and verifies" "$why" "$libdrm"
done < <(occurrences "$dump_calls" "$dump_host_calls")
host_seam_off

# --- the engine never completing --------------------------------------------------------------
# 1 MB/s: a chunk takes longer than the plugin's limit for it (2 s plus the chunk at 4 MB/s).
echo 1 >/sys/module/amdgpu_emu/parameters/sdma_mbps
t0=${EPOCHREALTIME/./}
if wl_dump "$pid" "$img" -R; then
	tap_not_ok "kfd: a dump whose copy engine hangs fails" "it succeeded"
else
	tap_ok "kfd: a dump whose copy engine hangs fails"
fi
log "the hung engine became an error after $(((${EPOCHREALTIME/./} - t0) / 1000)) ms (criu's whole run)"
echo 0 >/sys/module/amdgpu_emu/parameters/sdma_mbps
tap_log_has "kfd: the plugin says the engine is taken for hung, and after how long" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: GPU 0x[0-9a-f]+: SDMA submission [0-9]+ did not complete within [0-9.]+ s: the copy engine is taken for hung"
tap_alive_verified "kfd: after the hung engine" "$pid" "$state"

# --- restore -------------------------------------------------------------------------------------
arm_for_criu
tap_dump "kfd: the dump to restore from" "$pid" "$img"
wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
cp "$RESULTS_DIR/kfd.out" /tmp/img-95-kfd.out
echo reset >"$EMU_DEBUGFS/calls"
host_seam
if wl_restore "$img"; then
	tap_ok "kfd: a restore to count the calls"
else
	tap_not_ok "kfd: a restore to count the calls" "see ${CRIU_LAST_LOG#"$RESULTS_DIR"/}"
fi
restore_calls=$(cat "$EMU_DEBUGFS/calls")
restore_host_calls=$(host_calls_listing)
log "calls during a restore: $(tr '\n' ';' <<<"$restore_calls")"
log "host calls during a restore: $(tr '\n' ';' <<<"$restore_host_calls")"
if seam_saw "$restore_host_calls" open fstat read close; then
	tap_ok "kfd: the host seam sees the restore's image files and staging memory"
else
	tap_not_ok "kfd: the host seam sees the restore's image files and staging memory" "it saw: $restore_host_calls"
fi
wl_kill "$pid"
while read -r -a point; do
	name=$(point_name restore "${point[@]}")
	cp /tmp/img-95-kfd.out "$RESULTS_DIR/kfd.out" # criu restores the file at its dumped size
	arm_point "${point[@]}"
	why= libdrm=
	wl_restore "$img"
	status=$?
	disarm_point "${point[@]}" || why=$WHY_NOT
	if [ "$status" = 0 ]; then
		outcome="harmless: the restore succeeded"
		v=$(wl_ask "$pid" "$state" verify)
		[ "$v" = "VERIFY OK" ] || why="${why:+$why; }restored, but: $v"
		wl_kill "$pid"
	else
		outcome="criu restore failed"
		if ! plugin_named_failure "$CRIU_LAST_LOG"; then
			if in_libdrm_init "$status" "$CRIU_LAST_LOG" "${point[@]}"; then
				libdrm=libdrm
				why=unnamed
			else
				why="${why:+$why; }the plugin's log does not name the failure"
			fi
		fi
		wait_for "task_gone $pid '$state'" 5 || why="${why:+$why; }a task is left: $(pgrep -af -- "--state $state")"
		wait_for '! grep -q "^process" "$EMU_DEBUGFS/processes"' 5 ||
			why="${why:+$why; }a KFD process is left: $(grep '^process' "$EMU_DEBUGFS/processes" | head -n 1)"
		kill -KILL $(pgrep -f -- "--state $state") 2>/dev/null
		cp /tmp/img-95-kfd.out "$RESULTS_DIR/kfd.out"
		host_seam
		if wl_restore "$img"; then
			v=$(wl_ask "$pid" "$state" verify)
			[ "$v" = "VERIFY OK" ] || why="${why:+$why; }restored without the fault, but: $v"
			wl_kill "$pid"
		else
			why="${why:+$why; }the restore without the fault failed too"
		fi
	fi
	kill -KILL $(pgrep -f -- "--state $state") 2>/dev/null
	point_result "$name: $outcome; nothing half-restored is left" "$why" "$libdrm"
done < <(occurrences "$restore_calls" "$restore_host_calls")
host_seam_off

# --- RESUME fails on every try ------------------------------------------------------------------
cp /tmp/img-95-kfd.out "$RESULTS_DIR/kfd.out"
arm_for_criu
fault "criu 4 1 5"
fault "criu 4 2 5"
fault "criu 4 3 5"
if wl_restore "$img"; then
	tap_not_ok "kfd: a restore whose RESUME always fails fails" "it succeeded"
else
	tap_ok "kfd: a restore whose RESUME always fails fails"
fi
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
	tap_not_ok "kfd: after the sweep a restore without a fault succeeds" "see ${CRIU_LAST_LOG#"$RESULTS_DIR"/}"
fi

summary="fault sweep: $points points, $clean clean"
[ "$in_libdrm" = 0 ] || summary+=", $in_libdrm inside libdrm_amdgpu's device init (safe, unnamed)"
[ "$unreached" = 0 ] || summary+=", $unreached not reached (fewer such calls in that run)"
echo "# $summary ($sweep)"
if [ "$points" -gt 0 ] && [ "$((clean + in_libdrm + unreached))" -eq "$points" ]; then
	tap_ok "$summary"
else
	tap_not_ok "$summary"
fi
tap_no_kernel_warnings
e2e_done
