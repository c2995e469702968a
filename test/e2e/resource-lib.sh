# SPDX-License-Identifier: GPL-2.0-only
#
# Helpers shared by the resource and container scenarios (test/e2e/scenarios/4x-*.sh, 5x-*.sh),
# test/e2e/demo-guest.sh and test/bench/transfer.sh. Sourced after test/vm/lib.sh, in the guest,
# from the repo root.
#
#   (test/e2e/lib.sh, sourced here, brings the rest: workloads, criu in TAP, task snapshots)
#   wl_end <pid> <image dir>                                SIGTERM (SIGKILL if it stays), the
#                                                           images removed if nothing failed
#   tap_restored_in_cg <cgroup dir> <name>                  five TAP results: the restored $pid
#                                                           is in the cgroup, verifies, beats, and
#                                                           is the task dumped (<name>.dumped)
#   wl_start_in_cg <cgroup dir> <name>                      kfd_workload started in the cgroup
#                                                           (sets pid, state); else the end
#   resource_require <workload>                             skip (77) unless emulator, plugin and
#                                                           that workload are built
#   state_vram_mib <state>                                  MiB of VRAM BOs a state file lists
#   mem_mib <MemTotal|MemAvailable>                         from /proc/meminfo
#   copy_figures <criu log> <saved|restored>                the plugin's per-GPU copy lines:
#                                                           "<gpu> <MiB> <s> <MB/s> <staging MiB>
#                                                            <MiB written or read> <MiB of zeros>"
#   peak_rss_kib <file> <cmd...>                            runs cmd, writes its peak RSS
#                                                           (KiB, GNU time) to file
#   gpu_ids_hex, cg_make, cg_path, cg_remove, in_cg, gpu_access   GPU subsets ("containers")
#   vram_roundtrip <GPUs> <MiB per GPU> <BO MiB>            the round trip of scenarios 40-42
#   task_snapshot, tap_same_task    the restored task is the dumped one (task-snapshot.sh)

# shellcheck source=test/e2e/lib.sh
. "$VM_REPO/test/e2e/lib.sh"

wl_start_in_cg() {
	if ! WL_CGROUP=$1 wl_start kfd "$2"; then
		tap_not_ok "kfd_workload starts in the container"
		tap_done
	fi
	pid=$WL_PID state=$WL_STATE
}

wl_end() {
	kill -TERM "$1" 2>/dev/null
	wait_for "! kill -0 $1 2>/dev/null" 60 || wl_kill "$1"
	[ "$TAP_FAILED" -ne 0 ] || rm -rf "$2"
}

tap_restored_in_cg() {
	tap_check "the restored task is in the container" grep -qx "$pid" "$1/cgroup.procs"
	tap_verify "restored workload verifies" "$pid" "$state"
	tap_heartbeat "restored queue beats" "$pid" "$state"
	tap_same_task "restored in the container" "$RESULTS_DIR/$2.dumped" "$pid"
}

resource_require() {
	[ -e "$EMU_KO" ] || { echo "emulator not built ($EMU_KO)"; exit 77; }
	[ -n "$CRIU_LIBDIR" ] || { echo "plugin not built (plugins/amdgpu/amdgpu_plugin.so)"; exit 77; }
	[ -x "$E2E_BIN/$1_workload" ] || { echo "workloads not built (make -C test/e2e)"; exit 77; }
}

# state_vram_mib <state>: MiB of VRAM BOs the state file lists.
state_vram_mib() {
	local rec n _gpu id _kind kind _va _ _size size rest total=0
	while read -r rec n _gpu id _kind kind _va _ _size size rest; do
		[ "$rec" = bo ] && [ "${kind#vram}" != "$kind" ] && total=$((total + size))
	done <"$1"
	echo $((total / 1048576))
}

mem_mib() {
	local key value
	while read -r key value _; do
		[ "$key" != "$1:" ] || { echo $((value / 1024)); return 0; }
	done </proc/meminfo
	return 1
}

# copy_figures <criu log> <saved|restored>: one line per GPU from the plugin's info lines
# "pid N: saved GPU 0x1234: 512.0 MiB in 3.210 s (167 MB/s), 64.0 MiB staging".
copy_figures() {
	sed -n "s/.*amdgpu_plugin: pid [0-9]*: $2 GPU \\(0x[0-9a-f]*\\): \\([0-9.]*\\) MiB in \\([0-9.]*\\) s (\\([0-9]*\\) MB\\/s), \\([0-9.]*\\) MiB [a-z]*, \\([0-9.]*\\) MiB of zeros [a-z ]*, \\([0-9.]*\\) MiB staging.*/\\1 \\2 \\3 \\4 \\7 \\5 \\6/p" "$1"
}

# peak_rss_kib <file> <cmd...>: runs cmd (its status kept) under GNU time (Debian's `time`) and
# writes its maximum resident set size (ru_maxrss from wait4: the largest of the process and the
# children it waited for; for criu dump, criu itself) to <file>, in KiB.
peak_rss_kib() {
	local out=$1
	shift
	/usr/bin/time -f %M -o "$out" "$@"
}

# --- containers: GPU subsets through the emulator's gpu_access rules (test/emu/README.md) -------

EMU_ACCESS=/sys/kernel/debug/amdgpu_emu/gpu_access

# gpu_ids_hex: the gpu_id of every GPU node, in node order, as 0x%04x.
gpu_ids_hex() {
	local n id
	for n in $(emu_gpu_nodes); do
		read -r id <"$KFD_TOPOLOGY/$n/gpu_id"
		printf '0x%04x\n' "$id"
	done
}

# cg_make <var> <name>: creates a cgroup <name> below our own; its directory goes into <var>.
cg_make() {
	local -n cg_dir=$1
	local own
	own=$(sed -n 's/^0:://p' /proc/self/cgroup)
	cg_dir=/sys/fs/cgroup${own%/}/$2
	mkdir -p "$cg_dir"
}

# cg_path <dir>: the path gpu_access rules name a cgroup by (relative to the cgroup2 root).
cg_path() {
	echo "${1#/sys/fs/cgroup}"
}

# cg_remove <dir>: kills what is left in it and removes it.
cg_remove() {
	[ -d "$1" ] || return 0
	[ -z "$(<"$1/cgroup.procs")" ] || echo 1 >"$1/cgroup.kill"
	wait_for "[ -z \"\$(<'$1/cgroup.procs')\" ]" 10
	rmdir "$1"
}

# in_cg <dir> <cmd...>: runs cmd (a function too) in a subshell moved into the cgroup.
in_cg() {
	local dir=$1
	shift
	(echo "$BASHPID" >"$dir/cgroup.procs" && "$@")
}

# gpu_access <line>: writes one rule ("<cgroup path> <gpu_id,...>|none" or "clear").
gpu_access() {
	echo "$1" >"$EMU_ACCESS"
}

# --- the VRAM round trip of scenarios 40-42 ----------------------------------------------------

# vram_roundtrip <GPUs> <MiB per GPU> <largest BO MiB>: TAP checks for a kfd_workload with that
# much VRAM: verified, dumped (task gone, pages images hold the VRAM), restored onto the emulator
# reloaded with other gpu_ids and render minors, verified, beating. Prints the dump and restore
# times and the plugin's per-GPU copy figures. Images go to $RESULTS_DIR/images (the host, over
# 9p: no guest RAM next to the emulated VRAM) and are removed when everything passed. Exits 77
# when the guest cannot hold the VRAM. Loads and unloads the emulator.
vram_roundtrip() {
	local gpus=$1 per_gpu=$2 bo=$3 need avail state imgs pid vram rc t0 t_dump t_restore
	local dump_log restore_log pages gpu mib s mbps staging
	resource_require kfd
	# The emulated VRAM is guest RAM: the BOs, plus criu, the staging rings and slack.
	need=$((gpus * per_gpu + 384))
	avail=$(mem_mib MemAvailable)
	[ "$avail" -ge "$need" ] ||
		{ echo "guest has $avail MiB available, this needs $need (raise VM_MEM / run.sh --mem)"; exit 77; }

	emu_load preset=2xmi210 || exit 1
	state=$RESULTS_DIR/big.state
	imgs=$RESULTS_DIR/images
	rm -rf "$imgs"
	t0=$EPOCHREALTIME
	if ! wl_start kfd big --gpus "$gpus" --vram-mb "$per_gpu" --bo-mb "$bo"; then
		tap_not_ok "kfd_workload with $gpus x $per_gpu MiB of VRAM comes up"
		tap_done
	fi
	pid=$WL_PID
	vram=$(state_vram_mib "$state")
	if [ "$vram" -ge $((gpus * per_gpu)) ]; then
		tap_ok "kfd_workload holds $vram MiB of VRAM on $gpus GPU(s), largest BO $(state_largest_bo_mib "$state") MiB ($(elapsed "$t0") s to set up)"
	else
		tap_not_ok "kfd_workload holds $((gpus * per_gpu)) MiB of VRAM" "the state file lists $vram MiB"
	fi
	tap_verify "verified before the dump" "$pid" "$state" 600

	task_snapshot "$pid" "$RESULTS_DIR/big.dumped"
	t0=$EPOCHREALTIME
	criu_dump "$pid" "$imgs"
	rc=$?
	t_dump=$(elapsed "$t0")
	dump_log=$CRIU_LAST_LOG
	if [ "$rc" -eq 0 ] && wait_for "! kill -0 $pid 2>/dev/null" 10; then
		tap_ok "criu dump succeeds and the task is gone (${t_dump} s)"
	else
		tap_not_ok "criu dump succeeds and the task is gone" "criu status $rc; $(grep -m3 'Error' "$dump_log")"
		wl_kill "$pid"
		tap_done
	fi
	pages=$(stat -c %s "$imgs"/amdgpu-pages-*.img 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }')
	if [ "${pages:-0}" -ge $((gpus * per_gpu * 1048576)) ]; then
		tap_ok "pages images hold $((pages / 1048576)) MiB ($(stat -c '%n %s' "$imgs"/amdgpu-pages-*.img | sed 's|.*/||' | tr '\n' ' '))"
	else
		tap_not_ok "pages images hold the VRAM" "${pages:-no} bytes in $imgs/amdgpu-pages-*.img"
	fi

	# Another node: the same GPUs with other ids and render minors.
	emu_reload preset=2xmi210 gpu_ids=0x5a11,0x5a22 render_minor_base=150 || { tap_not_ok "emulator reload"; tap_done; }
	t0=$EPOCHREALTIME
	criu_restore "$imgs"
	rc=$?
	t_restore=$(elapsed "$t0")
	restore_log=$CRIU_LAST_LOG
	if [ "$rc" -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
		tap_ok "criu restore onto other gpu_ids succeeds (${t_restore} s)"
	else
		tap_not_ok "criu restore onto other gpu_ids succeeds" "criu status $rc; $(grep -m3 'Error' "$restore_log")"
		tap_done
	fi
	tap_verify "restored process verifies every byte" "$pid" "$state" 600
	tap_heartbeat "restored queues beat" "$pid" "$state"
	tap_same_task "restored" "$RESULTS_DIR/big.dumped" "$pid"

	log "figures (not checks): dump ${t_dump} s, restore ${t_restore} s (whole criu runs) for $vram MiB of VRAM"
	# The per-GPU figures go into the results' text too, so that the suite's output shows them.
	local figures=""
	while read -r gpu mib s mbps staging; do
		log "  dump    GPU $gpu: $mib MiB in $s s = $mbps MB/s (staging $staging MiB)"
		figures+="${figures:+, }dump $gpu $mib MiB $s s $mbps MB/s"
	done < <(copy_figures "$dump_log" saved)
	while read -r gpu mib s mbps staging; do
		log "  restore GPU $gpu: $mib MiB in $s s = $mbps MB/s (staging $staging MiB)"
		figures+="${figures:+, }restore $gpu $mib MiB $s s $mbps MB/s"
	done < <(copy_figures "$restore_log" restored)
	if [ -n "$(copy_figures "$dump_log" saved)" ] && [ -n "$(copy_figures "$restore_log" restored)" ]; then
		tap_ok "the plugin logs its per-GPU copy figures: $figures"
	else
		tap_not_ok "the plugin logs its per-GPU copy figures" "no 'saved GPU'/'restored GPU' line in the criu logs"
	fi

	wl_end "$pid" "$imgs"
	emu_unload
}

# elapsed <EPOCHREALTIME at start>: seconds since, one decimal.
elapsed() {
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

# state_largest_bo_mib <state>: the largest content BO a state file lists, MiB.
state_largest_bo_mib() {
	local rec n _gpu id _kind kind _va _ _size size rest max=0
	while read -r rec n _gpu id _kind kind _va _ _size size rest; do
		[ "$rec" = bo ] && [ $((size)) -gt "$max" ] && max=$((size))
	done <"$1"
	echo $((max / 1048576))
}
