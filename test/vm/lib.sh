# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Helpers for test-bed scenarios, sourced inside the guest: `. test/vm/lib.sh`.
# Scenarios run from the repo root with $RESULTS_DIR set to a host-visible directory for their logs
# (see test/vm/README.md for the whole contract).
#
#   emu_load [param=value...]    load the emulator (and what it depends on); waits for its devices
#   emu_unload                   unload it; waits until /dev/kfd and the kfd class are gone
#   emu_reload [param=value...]  both
#   emu_gpu_nodes                the topology node numbers that are GPUs, one per line
#   emu_node_prop <node> <key>   a value from a topology node's properties
#   emu_require <program> [hint] skip (77) unless the emulator and the program are built
#   emu_tap_relay <preset> <what> <cmd...>   the emulator loaded with the preset, cmd's TAP relayed
#                                (prefixed with the preset), the emulator unloaded
#   plugin_dir                   the directory with the built amdgpu_plugin.so (fails if unbuilt)
#   spawn <var> <name> <cmd...>  start a workload the criu way (own session, stdio to
#                                $RESULTS_DIR/<name>.out); its pid goes into <var>
#   criu_dump <pid> <imgdir> [criu args...]     criu dump with our plugin and a log in RESULTS_DIR
#   criu_restore <imgdir> [criu args...]        criu restore (detached) likewise
#   criu_start <action> [criu args...]          criu in the background: CRIU_PID, CRIU_LAST_LOG
#   streamer_start capture|serve <imgdir> <stream file>   the image streamer stand-in
#                                (test/streamer/) on <imgdir>'s socket, for criu --stream;
#                                streamer_wait: its exit status once criu is done with it
#   wait_for <shell condition> <seconds>        poll until true; fails on timeout
#   dmesg_mark <marker>, tap_dmesg_clean <marker>  no WARN/BUG/Oops in the kernel log since a mark
#   tap_ok / tap_not_ok / tap_skip <name> [why], tap_check <name> <cmd...>, tap_done
#   tap_relay <prefix> <cmd...>  relay the TAP results of a program as our own
#
# $CRIU_LIBDIR decides the plugin directory of the criu wrappers: plugin_dir by default (when
# built); set it to an empty value to run criu without --libdir.

set -u
VM_REPO=${VM_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
if [ -z "${RESULTS_DIR:-}" ]; then
	RESULTS_DIR=$(mktemp -d /tmp/results.XXXXXX)
	export RESULTS_DIR
fi

EMU_KO=${EMU_KO:-$VM_REPO/test/emu/amdgpu.ko}
KFD_TOPOLOGY=/sys/class/kfd/kfd/topology/nodes

log() { echo "# $*"; }

# --- waiting ---------------------------------------------------------------------------------

# wait_for <shell condition> <seconds>: true as soon as the condition is, false after the time.
wait_for() {
	local cond=$1 limit=$2 end
	end=$(( ${EPOCHREALTIME/./} + limit * 1000000 ))
	until eval "$cond"; do
		[ "${EPOCHREALTIME/./}" -lt "$end" ] || return 1
		sleep 0.1
	done
}

# --- the emulator ----------------------------------------------------------------------------
# Every process costs tens of milliseconds under TCG: these helpers stick to shell builtins.

# Sets EMU_MODULE (the module's name as the kernel knows it) and EMU_DEPS (the modules it links
# against: drm and helpers), from the .ko, once.
emu_info() {
	[ -z "${EMU_MODULE:-}" ] || return 0
	local key value
	EMU_MODULE=${EMU_KO##*/}
	EMU_MODULE=${EMU_MODULE%.ko}
	EMU_DEPS=
	while read -r key value; do
		case "$key" in
		name:) [ -z "$value" ] || EMU_MODULE=$value ;;
		depends:) EMU_DEPS=${value//,/ } ;;
		esac
	done < <(modinfo "$EMU_KO" 2>/dev/null)
}

# The topology node numbers whose gpu_id is not 0 (node 0 is the CPU), in numeric order.
emu_gpu_nodes() {
	local dir id
	local -a gpu=()
	for dir in "$KFD_TOPOLOGY"/*; do
		[ -r "$dir/gpu_id" ] || continue
		read -r id <"$dir/gpu_id" || continue
		[ "$id" = 0 ] || gpu[${dir##*/}]=1
	done
	[ "${#gpu[@]}" -eq 0 ] || printf '%s\n' "${!gpu[@]}"
}

# emu_node_prop <node> <property>: one value of the node's properties file.
emu_node_prop() {
	local key value
	while read -r key value; do
		[ "$key" != "$2" ] || { echo "$value"; return 0; }
	done <"$KFD_TOPOLOGY/$1/properties"
	return 1
}

# True when every GPU node's render node exists.
emu_render_nodes_ready() {
	local n minor
	for n in $(emu_gpu_nodes); do
		minor=$(emu_node_prop "$n" drm_render_minor) && [ -c "/dev/dri/renderD$minor" ] || return 1
	done
}

emu_load() {
	local dep
	[ -e "$EMU_KO" ] || { log "emulator not built: $EMU_KO"; return 1; }
	emu_info
	if [ -e /sys/module/amdgpu ] && [ "$EMU_MODULE" != amdgpu ]; then
		log "the real amdgpu driver is loaded; it and the emulator both claim the kfd class"
		return 1
	fi
	for dep in $EMU_DEPS; do
		[ -d "/sys/module/$dep" ] || modprobe "$dep" || { log "modprobe $dep failed"; return 1; }
	done
	insmod "$EMU_KO" "$@" || { log "insmod $EMU_KO $* failed"; return 1; }
	wait_for '[ -c /dev/kfd ] && [ -d "$KFD_TOPOLOGY" ] && emu_render_nodes_ready' 10 ||
		{ log "the emulator loaded, but /dev/kfd or its render nodes did not appear"; return 1; }
}

emu_unload() {
	emu_info
	if [ -d "/sys/module/$EMU_MODULE" ]; then
		# The last user's file may still be closing (a process just killed): retry briefly.
		wait_for 'rmmod "$EMU_MODULE" 2>/dev/null' 5 || rmmod "$EMU_MODULE" ||
			{ log "rmmod $EMU_MODULE failed"; return 1; }
	fi
	wait_for '[ ! -e /dev/kfd ] && [ ! -e /sys/class/kfd ]' 10 ||
		{ log "/dev/kfd or /sys/class/kfd still there after unloading $EMU_MODULE"; return 1; }
}

emu_reload() {
	emu_unload && emu_load "$@"
}

# --- criu ------------------------------------------------------------------------------------

plugin_dir() {
	local dir=$VM_REPO/plugins/amdgpu
	[ -e "$dir/amdgpu_plugin.so" ] || return 1
	echo "$dir"
}

if [ -z "${CRIU_LIBDIR+set}" ]; then
	CRIU_LIBDIR=$(plugin_dir) || CRIU_LIBDIR=
fi

# spawn <var> <name> <cmd...>: runs <cmd> as the leader of its own session (what criu dumps
# without --shell-job), stdin from /dev/null, output to $RESULTS_DIR/<name>.out, and not as a child
# of the caller (like a restored process will be): init reaps it. Its pid goes into <var>.
spawn() {
	local -n spawn_pid=$1
	local name=$2
	shift 2
	# A background job of a non-interactive (sub)shell is not a group leader, so setsid does not
	# fork and $! is the workload's own pid.
	# shellcheck disable=SC2034 # a name reference: this sets the caller's variable
	spawn_pid=$(setsid "$@" </dev/null >"$RESULTS_DIR/$name.out" 2>&1 & echo $!)
}

# The next free log name for a criu action: dump.log, dump-2.log, ...
criu_log_path() {
	local base=$RESULTS_DIR/$1 n=2 path
	path=$base.log
	while [ -e "$path" ]; do
		path=$base-$n.log
		n=$((n + 1))
	done
	echo "$path"
}

# Runs criu with the plugin directory and a log; CRIU_LAST_LOG names the log afterwards. With
# CRIU_RSS_FILE set, criu's peak RSS (KiB, GNU time) goes into that file; the array CRIU_ENV
# ("NAME=value" words) is added to criu's environment only.
criu_run() {
	local action=$1
	shift
	CRIU_LAST_LOG=$(criu_log_path "$action")
	local libdir=() timed=() envs=()
	[ -z "$CRIU_LIBDIR" ] || libdir=(--libdir "$CRIU_LIBDIR")
	[ -z "${CRIU_RSS_FILE:-}" ] || timed=(/usr/bin/time -f %M -o "$CRIU_RSS_FILE")
	[ -z "${CRIU_ENV[*]:-}" ] || envs=(env "${CRIU_ENV[@]}")
	"${timed[@]}" "${envs[@]}" criu "$action" "${libdir[@]}" -v4 -o "$CRIU_LAST_LOG" "$@"
}

# criu_start <action> [criu args...]: criu_run in the background, its output in $CRIU_LAST_LOG.out;
# CRIU_PID is criu's own pid (to kill it), CRIU_LAST_LOG its log.
criu_start() {
	local action=$1
	shift
	CRIU_LAST_LOG=$(criu_log_path "$action")
	local libdir=()
	[ -z "$CRIU_LIBDIR" ] || libdir=(--libdir "$CRIU_LIBDIR")
	criu "$action" "${libdir[@]}" -v4 -o "$CRIU_LAST_LOG" "$@" >"$CRIU_LAST_LOG.out" 2>&1 &
	CRIU_PID=$!
}

criu_dump() {
	local pid=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	criu_run dump -t "$pid" -D "$dir" "$@"
}

criu_restore() {
	local dir=$1
	shift
	criu_run restore -D "$dir" -d "$@"
}

# --- the image streamer stand-in (test/streamer/README.md) ------------------------------------

IMAGE_STREAMER=${IMAGE_STREAMER:-$VM_REPO/build/test/image-streamer}

streamer_start() {
	local mode=$1 dir=$2 stream=$3 sock
	mkdir -p "$dir"
	case "$mode" in
	capture)
		sock=$dir/streamer-capture.sock
		"$IMAGE_STREAMER" --images-dir "$dir" capture >"$stream" 2>>"$RESULTS_DIR/streamer.log" &
		;;
	serve)
		sock=$dir/streamer-serve.sock
		"$IMAGE_STREAMER" --images-dir "$dir" serve <"$stream" 2>>"$RESULTS_DIR/streamer.log" &
		;;
	esac
	STREAMER_PID=$!
	wait_for "[ -S '$sock' ] || ! kill -0 $STREAMER_PID 2>/dev/null" 20 && [ -S "$sock" ]
}

streamer_wait() {
	wait_for "! kill -0 $STREAMER_PID 2>/dev/null" 30 || kill -KILL "$STREAMER_PID" 2>/dev/null
	wait "$STREAMER_PID"
}

# --- the emulated copy engines -------------------------------------------------------------

EMU_ENGINES=${EMU_ENGINES:-/sys/kernel/debug/amdgpu_emu/engines}

# sdma_engine_bytes: the bytes each emulated SDMA engine has moved (debugfs), space-separated.
sdma_engine_bytes() {
	awk '{ print $6 }' "$EMU_ENGINES" | tr '\n' ' '
}

# shader_instructions: the wave instructions each emulated GPU's shader core has run (debugfs),
# space-separated.
shader_instructions() {
	awk '{ print $8 }' "$EMU_ENGINES" | tr '\n' ' '
}

# tap_sdma_moved <name> <bytes before> <at least>: one result: every engine moved at least that
# many bytes since sdma_engine_bytes gave <bytes before>.
tap_sdma_moved() {
	local name=$1 before=$2 need=$3 after short
	after=$(sdma_engine_bytes)
	short=$(paste <(tr ' ' '\n' <<<"$before") <(tr ' ' '\n' <<<"$after") |
		awk -v need="$need" 'NF == 2 { if ($2 - $1 < need) bad++ } END { print bad + 0 }')
	if [ "$short" = 0 ]; then
		tap_ok "$name ($before-> $after bytes)"
	else
		tap_not_ok "$name" "bytes before: $before; after: $after"
	fi
}

# --- the kernel log --------------------------------------------------------------------------

# dmesg_mark <marker>: writes a line to the kernel log that tap_dmesg_clean looks back to.
dmesg_mark() {
	echo "$1" >/dev/kmsg
}

# tap_dmesg_clean <marker>: one result: no warning, BUG or Oops in the kernel log since the mark.
tap_dmesg_clean() {
	local bad
	bad=$(dmesg | sed -n "\\|$1\$|,\$p" | grep -E \
		'WARNING:|BUG:|Oops|general protection|Call Trace|refcount_t:|list_(add|del) corruption|UBSAN|KASAN')
	if [ -z "$bad" ]; then
		tap_ok "the kernel log has no WARN, BUG or Oops"
	else
		tap_not_ok "the kernel log has no WARN, BUG or Oops" "$(echo "$bad" | head -n5)"
	fi
}

# emu_require <program> [what is missing then]: skip (77) unless the emulator and the program are
# built
emu_require() {
	[ -e "$EMU_KO" ] || { echo "emulator not built ($EMU_KO)"; exit 77; }
	[ -x "$1" ] || { echo "no $1${2:+ ($2)}"; exit 77; }
}

# emu_tap_relay <preset> <what> <cmd...>: loads the emulator with the preset, relays the TAP of
# cmd (a test program run against it) prefixed with the preset, and unloads it; a failed load or
# unload is a result of its own ("<preset>: unload after <what>").
emu_tap_relay() {
	local p=$1 what=$2
	shift 2
	if ! emu_reload preset="$p"; then
		tap_not_ok "$p: load"
		return 1
	fi
	tap_relay "$p" "$@"
	emu_unload || tap_not_ok "$p: unload after $what"
}

# --- TAP -------------------------------------------------------------------------------------

TAP_N=0
TAP_FAILED=0

tap_ok() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1"
}

tap_not_ok() {
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok $TAP_N - $1"
	[ -z "${2:-}" ] || log "$2"
}

tap_skip() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1 # SKIP ${2:-}"
}

# tap_check <name> <cmd...>: one result from a command's status; its output goes to the log.
tap_check() {
	local name=$1
	shift
	if "$@"; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "failed: $*"
	fi
}

# What follows "ok" / "not ok": the description without its number and dash (directives stay).
tap_description() {
	[[ $1 =~ ^[[:space:]]*[0-9]*[[:space:]]*-?[[:space:]]*(.*)$ ]]
	echo "${BASH_REMATCH[1]}"
}

# tap_relay <prefix> <cmd...>: runs a program that prints TAP and makes its results ours,
# renumbered, each name prefixed with "<prefix>: ". Diagnostics pass through. A "Bail out!", or a
# failing status that no "not ok" explains, is one more failure; status 77 with no results is a
# skip. Returns the program's status.
tap_relay() {
	local prefix=$1 line rc=125 failed_before=$TAP_FAILED seen=0
	shift
	while IFS= read -r line; do
		case "$line" in
		"not ok"*)
			tap_not_ok "$prefix: $(tap_description "${line#not ok}")"
			seen=1
			;;
		ok*)
			TAP_N=$((TAP_N + 1))
			echo "ok $TAP_N - $prefix: $(tap_description "${line#ok}")"
			seen=1
			;;
		"Bail out!"*) tap_not_ok "$prefix: bail out:${line#Bail out!}" ;;
		"#relay-status "*) rc=${line#"#relay-status "} ;;
		"#"*) echo "$line" ;;
		*) [ -z "$line" ] || echo "# $line" ;;
		esac
	done < <("$@" 2>&1; echo "#relay-status $?")
	if [ "$rc" = 77 ] && [ "$seen" -eq 0 ]; then
		tap_skip "$prefix" "$* exited 77"
	elif [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ "$TAP_FAILED" -eq "$failed_before" ]; then
		tap_not_ok "$prefix: $(basename "$1") exited $rc"
	fi
	return "$rc"
}

# Ends a TAP scenario: prints the plan, exits 1 if anything failed.
tap_done() {
	echo "1..$TAP_N"
	[ "$TAP_FAILED" -eq 0 ] || exit 1
	exit 0
}
