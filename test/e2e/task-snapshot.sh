# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# A restored process is the process that was dumped: snapshot a task before the dump, compare the
# restored task with it. Sourced by test/e2e/lib.sh.
#
#   task_snapshot <pid> <file>           what a user (and the GPU) can see of the task, normalised
#   tap_same_task <name> <file> <pid> [--larger-node | --events-made-since]
#                                        four TAP results: the restored task <pid> has the same
#                                        fd table, memory map, GPU state and host surroundings;
#                                        on a larger node, GPUs it gained are not a difference;
#                                        for a task whose runtime makes KFD events as it runs,
#                                        events it made since are not
#
# Normalised so that a faithful restore on other GPUs compares equal: render nodes (found by their
# device number, whatever their path) are named by the gpu_id the task knows (not the minor),
# device mappings by the same; mmap offsets, which a restore
# moves, are left out; adjacent mappings of one file with the same protection are merged (criu
# restores a split read-only region as one), and an anonymous reservation whose accessible head
# grows into its inaccessible tail (a malloc arena of a thread, which the task's runtime may
# extend between the snapshot and criu's freeze) is one "arena" mapping; paths are the ones the
# task sees, from its own root (a task chrooted into a userland's root: its /dev/kfd, not
# <root>/dev/kfd). What is compared:
#   fd      every fd: number, kind of file (path, render node of which GPU, pipe, socket...), flags
#           (but O_LARGEFILE)
#   map     every mapping: addresses, protection, what it maps
#   gpu     the emulator's view: one KFD process, its GPUs, BOs (handle, VA, size, flags, mapped
#           GPUs), queues (GPU, type), events. Not whether a GPU's VM was acquired: KFD's RESTORE
#           acquires one on every GPU of the process, also on those it had not opened yet, and a
#           process restored on a larger node has every GPU of that node (their buckets are
#           required). Not how many /dev/kfd files hold the process: criu
#           maps a restored task's doorbell and MMIO pages through /dev/kfd files it opens for
#           them (reachable only from those mappings), where the task had used its own fd.
#   host    the workloads running on the guest and the files in /dev/shm

EMU_DEBUGFS=${EMU_DEBUGFS:-/sys/kernel/debug/amdgpu_emu}

# The gpu_id the task knows for a render minor: topology minor -> actual id -> the task's id (the
# emulator's process view), or the actual id when the task has no KFD state.
snapshot_render_ids() { # <pid>: prints "minor user_gpu_id" lines
	local pid=$1 dir minor id
	local -A user=()
	while read -r user_id actual_id; do
		user[$actual_id]=$user_id
	done < <(awk -v pid="$pid" '
		$1 == "process" { cur = ($3 == pid) }
		cur && $1 == "gpu" { print $4, $6 }
	' "$EMU_DEBUGFS/processes" 2>/dev/null)
	for dir in "$KFD_TOPOLOGY"/*; do
		[ -r "$dir/gpu_id" ] || continue
		read -r id <"$dir/gpu_id"
		[ "$id" != 0 ] || continue
		minor=$(awk '$1 == "drm_render_minor" { print $2 }' "$dir/properties")
		id=$(printf '0x%x' "$id")
		echo "$minor ${user[$id]:-$id}"
	done
}

task_snapshot() {
	local pid=$1 out=$2 f n target flags minor root
	local -A gpu_of=()
	root=$(readlink "/proc/$pid/root")
	[ "$root" != / ] || root=''
	# snapshot_maps: /proc/<pid>/maps with the paths as the task sees them
	snapshot_maps() {
		if [ -n "$root" ]; then
			awk -v root="$root" '{ i = index($0, " " root "/"); if (i) $0 = substr($0, 1, i) substr($0, i + length(root) + 1); print }' "/proc/$pid/maps"
		else
			cat "/proc/$pid/maps"
		fi
	}
	while read -r minor id; do gpu_of[$minor]=$id; done < <(snapshot_render_ids "$pid")
	# the GPU of an fd or mapping of a render node, by the node's device number: its name may
	# not be the one sysfs gives (a node renamed, a container's /dev)
	render_gpu() {
		local t
		t=$(stat -L -c %T "$1" 2>/dev/null) && echo "${gpu_of[$((16#$t))]:-?}" || echo "?"
	}
	{
		for f in /proc/"$pid"/fd/*; do
			n=${f##*/}
			target=$(readlink "$f") || continue
			[ -z "$root" ] || [ "${target#"$root"/}" = "$target" ] || target=/${target#"$root"/}
			flags=$(awk '$1 == "flags:" { print $2 }' "/proc/$pid/fdinfo/$n" 2>/dev/null)
			# O_LARGEFILE means nothing to a 64-bit task, and a container engine hands criu
			# new stdio pipes with it set
			[ -z "$flags" ] || flags=$(printf '0%o' $((8#$flags & ~8#100000)))
			case "$target" in
			/dev/dri/renderD*) target="render node of GPU $(render_gpu "$f")" ;;
			pipe:* | socket:*) target=${target%%:*} ;;
			esac
			echo "fd $n $target flags $flags"
		done | sort -n -k2
		awk -v ids="$(snapshot_maps | awk '$6 ~ /^\/dev\/dri\/renderD/ { print $1 }' | while read -r range; do
			echo "$range=$(render_gpu "/proc/$pid/map_files/$range")"; done)" '
			BEGIN { n = split(ids, l, "\n"); for (i = 1; i <= n; i++) { split(l[i], kv, "="); gpu[kv[1]] = kv[2] } }
			{
				split($1, r, "-"); what = $6
				for (i = 7; i <= NF; i++) what = what " " $i
				if (what ~ /^\/dev\/dri\/renderD/) what = "render node of GPU " gpu[$1]
				if (what == "") what = "anonymous"
				if (have && r[1] == end && $2 == perm && what == cur && what != "anonymous") { end = r[2]; next }
				if (have && r[1] == end && perm == "rw-p" && $2 == "---p" && cur == "anonymous" && what == cur) {
					end = r[2]; perm = "rw-p+---p"; cur = "arena"; next
				}
				if (have) print "map " start "-" end " " perm " " cur
				start = r[1]; end = r[2]; perm = $2; cur = what; have = 1
			}
			END { if (have) print "map " start "-" end " " perm " " cur }
		' <(snapshot_maps)
		awk -v pid="$pid" '
			$1 == "process" { n_all++; cur = ($3 == pid); if (cur) { n++; print "gpu process paused " $7 " restore_pending " $9 } ; next }
			!cur { next }
			$1 == "gpu" { print "gpu device " $4; user[$6] = $4 }
			$1 == "bo" { print "gpu bo handle " $3 " va " $5 " size " $7 " flags " $9 " mapped " $11 }
			$1 == "queue" { print "gpu queue " $2 " on " (($4 in user) ? user[$4] : $4) " type " $6 " evicted " $8 }
			$1 == "event" { print "gpu event " $2 " type " $4 " auto_reset " $6 }
			$1 == "signal" { print "gpu signal page " $3 }
			END { print "gpu KFD processes with this pid: " n + 0 "; in all: " n_all + 0 }
		' "$EMU_DEBUGFS/processes" 2>/dev/null
		pgrep -a -f '_workload ' | sed 's/^[0-9]* /host process /' | sort
		for f in /dev/shm/*; do [ -e "$f" ] && echo "host /dev/shm/${f##*/}"; done
	} >"$out"
}

tap_same_task() {
	local name=$1 before=$2 pid=$3 larger=${4:-} after kind diffs
	after=$(mktemp)
	task_snapshot "$pid" "$after"
	if [ "$larger" = --larger-node ]; then
		# GPUs the task gained on a larger node are not a difference.
		grep -v -x -F -f <(grep '^gpu device ' "$before") <(grep '^gpu device ' "$after") >"$after.gained"
		grep -v -x -F -f "$after.gained" "$after" >"$after.kept"
		mv "$after.kept" "$after"
		rm -f "$after.gained"
	elif [ "$larger" = --events-made-since ]; then
		# A task whose runtime makes KFD events as it runs (HIP's signals for its kernels) has
		# made some since its restore: every event dumped must be back, new ones are no difference.
		grep -v -x -F -f <(grep '^gpu event ' "$before") <(grep '^gpu event ' "$after") >"$after.gained"
		grep -v -x -F -f "$after.gained" "$after" >"$after.kept"
		mv "$after.kept" "$after"
		rm -f "$after.gained"
	fi
	for kind in "fd:the same fd table" "map:the same memory map" "gpu:the same GPU state (emulator view)" \
		"host:nothing new on the host (processes, /dev/shm)"; do
		diffs=$(diff <(grep "^${kind%%:*} " "$before") <(grep "^${kind%%:*} " "$after") | grep '^[<>]')
		if [ -z "$diffs" ] && grep -q "^${kind%%:*} " "$before"; then
			tap_ok "$name: ${kind#*:}"
		else
			tap_not_ok "$name: ${kind#*:}" "dumped (<) and restored (>) differ"
			echo "${diffs:-(no ${kind%%:*} lines at all)}" | head -n 12 | sed 's/^/#   /'
		fi
	done
	rm -f "$after"
}
