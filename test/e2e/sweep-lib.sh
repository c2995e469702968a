# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# The fault sweep's engine (test/e2e/scenarios/95-fault-sweep.sh says what it checks): the calls
# criu's plugin makes, counted by the emulator (debugfs calls) and by the preloaded host seam
# (test/host-faults/README.md); the points to try from those counts; arming and disarming one point;
# one point of a dump and of a restore with its checks; the tally. Sourced in the guest after
# test/vm/lib.sh and test/e2e/lib.sh. The scenario sets pid, state and img (the workload and its
# image directory) and runs the loops.
#
#   sweep, points, clean, in_libdrm, unreached   FAULT_SWEEP (part|full) and the tally
#   fault <line>, arm_for_criu            the emulator's fault rules (faults for tasks named criu)
#   host_seam [fault], host_seam_off      criu runs with the host seam preloaded (CRIU_ENV)
#   host_calls_listing                    "call what count" of the host calls since host_seam
#   seam_saw <listing> <call...>          the seam saw each of these calls
#   occurrences <kernel listing> <host listing>   the points to try, one a line
#   sweep_dump_point <point...>           one point of the dump: one TAP result
#   sweep_restore_point <point...>        one point of the restore: one TAP result
#   tap_sweep_summary                     the tally as one TAP result

# shellcheck disable=SC2154 # pid, state and img are the scenario's
sweep=${FAULT_SWEEP:-part}
HOST_FAULTS=$VM_REPO/build/test/libhost-faults.so
HOST_CALLS=/tmp/host-calls-95 # a local filesystem: the seam maps its counts shared
points=0 clean=0 in_libdrm=0 unreached=0

fault() { echo "$1" >"$EMU_DEBUGFS/fault"; }
# criu, the tasks it restores (named criu until they run), and the restore guard, which copies a
# restored task's GPU memory while criu restores the rest (restore_guard.hpp)
arm_for_criu() {
	fault clear
	fault "comm criu amdgpu-guard"
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
		if [ "$sweep" = full ]; then
			for ((nth = 1; nth <= count; nth++)); do echo "kernel $kind $nr $nth 5"; done
		elif [ "$kind" = drm ]; then
			echo "kernel $kind $nr 1 5"
		fi
		# The part leaves KFD's ioctls and CRIU ops to the host tests, which fail each of them
		# in a dump and a restore (test/unit/dump_session_test.cpp, restore_session_test.cpp).
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
	WHY_NOT='' UNREACHED=''
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
	# (in the restore guard, which is no child of criu: criu's log says only that it is gone)
	[ "$status" = 139 ] || grep -Eq "signal 11|restore guard \(pid [0-9]+\) cannot say .*: it is gone" "$log" 2>/dev/null
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

# sweep_dump_point <point...>: one point of the dump (see the scenario): criu dump -R of $pid with
# the point armed, then the checks; one TAP result.
sweep_dump_point() {
	local point=("$@") name why libdrm status outcome v
	name=$(point_name dump "${point[@]}")
	arm_point "${point[@]}"
	why='' libdrm=''
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
}

# sweep_restore_point <point...>: one point of the restore of $img (see the scenario): criu restore
# with the point armed, then the checks; one TAP result.
sweep_restore_point() {
	local point=("$@") name why libdrm status outcome v
	name=$(point_name restore "${point[@]}")
	cp /tmp/img-95-kfd.out "$RESULTS_DIR/kfd.out" # criu restores the file at its dumped size
	arm_point "${point[@]}"
	why='' libdrm=''
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
}

# tap_sweep_summary: the sweep's count, one TAP result: every point clean (or known as safe)
tap_sweep_summary() {
	local summary="fault sweep: $points points, $clean clean"
	[ "$in_libdrm" = 0 ] || summary+=", $in_libdrm inside libdrm_amdgpu's device init (safe, unnamed)"
	[ "$unreached" = 0 ] || summary+=", $unreached not reached (fewer such calls in that run)"
	echo "# $summary ($sweep)"
	if [ "$points" -gt 0 ] && [ "$((clean + in_libdrm + unreached))" -eq "$points" ]; then
		tap_ok "$summary"
	else
		tap_not_ok "$summary"
	fi
}
