# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Host-side helpers to boot the test-bed guest, sourced by run.sh, run-suite.sh and demo.sh.
# One guest = one run directory (host path, visible in the guest through 9p) that carries the
# command in and the results out; see test/vm/guest.sh for its files.

VM_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VM_CACHE="$VM_TOP/build/vm"
# Shared with every checkout on this machine: one QEMU at a time (2 cores).
VM_QEMU_LOCK=/tmp/amdgpu-qemu.lock
# Time allowed for firmware, kernel, init and power-off around the command itself.
VM_BOOT_MARGIN=${VM_BOOT_MARGIN:-90}

vm_die() {
	echo "vm: $*" >&2
	exit 125
}

# The guest to boot (test/vm/prepare.sh): bookworm, the default, or trixie.
VM_GUEST=${VM_GUEST:-bookworm}

# How QEMU's TCG runs the two vCPUs: "multi" (a host thread each, the default) or "single" (one
# host thread taking turns). The trixie guest's kernel (7.x) patches its own text at run time
# whenever a static key flips, by the int3 protocol: another CPU may meet the int3 only while the
# patch is in progress. Bookworm's QEMU 7.2 let a vCPU of its multi-threaded TCG run a stale
# translation of the int3 after the patch completed, and the guest died with "Oops: int3" (about
# 1 boot in 6 on a loaded host), so the trixie guest ran single-threaded. scripts/install-deps.sh
# installs QEMU 10 from bookworm-backports, which boots the 7.x kernel cleanly with a thread per
# vCPU; that runs the trixie guest's make check scenarios in 640 s where one thread took 780
# (and QEMU 7.2's one thread about 1040). VM_TCG_THREAD=single is there to tell an emulator race
# from a guest one.
VM_TCG_THREAD=${VM_TCG_THREAD:-multi}

# Makes sure the guest's root, kernel and initramfs exist; sets GUEST, ROOT, ABI, KERNEL, INITRD.
vm_prepare() {
	"$VM_TOP/test/vm/prepare.sh" -q "$VM_GUEST" || vm_die "test/vm/prepare.sh $VM_GUEST failed"
	# shellcheck source=/dev/null
	. "$VM_CACHE/guest-$VM_GUEST.env"
}

# vm_new_run <dir> <timeout-seconds> <bash script text>
vm_new_run() {
	local run=$1
	rm -rf "$run"
	mkdir -p "$run/results"
	echo "$2" >"$run/timeout"
	printf '%s\n' "$3" >"$run/command"
}

# vm_boot <run-dir> <mem-MB> <command-output> [<poll-function>]
# Boots the guest for the run directory and waits for it to end. The command's output (the
# guest's second serial port) goes to <command-output>: "stdio" or a file. The kernel console goes
# to <run-dir>/console.log. While the guest runs, <poll-function> is called every 0.2 s. Records
# host times in <run-dir>/times. Returns QEMU's status (124: the host-side time limit hit); exits
# 130 if interrupted (the guest is stopped first).
vm_boot() {
	local run=$1 mem=$2 output=$3 poll=${4:-}
	local limit=$(($(cat "$run/timeout") + VM_BOOT_MARGIN))
	local serial2 qemu rc seen=0
	case "$output" in
	stdio) serial2=stdio ;;
	*) serial2="file:$output" ;;
	esac
	# KPTI and friends make every guest syscall flush TCG's TLB: off (mitigations=off) they cost
	# nothing in a throwaway guest. The i8042 probe alone is ~1s under TCG; there is no keyboard.
	local append="console=ttyS0 quiet panic=-1 mitigations=off i8042.noaux i8042.nokbd i8042.nopnp"
	append+=" 8250.nr_uarts=2 tsc=reliable no_timer_check vmrepo=$VM_TOP vmrun=$run vmcache=${VM_9P_CACHE:-loose}"
	append+=" vmguest=$GUEST"
	# A root of its own does not hold this checkout: it comes as a 9p export of its own.
	local repo_share=()
	if [ "$ROOT" != / ]; then
		repo_share=(-virtfs "local,path=$VM_TOP,mount_tag=repo,security_model=passthrough,multidevs=remap")
		append+=" vmrepotag=repo"
	fi
	# One guest at a time on this machine. QEMU inherits the lock's descriptor, so the lock lives
	# as long as QEMU does, whatever happens to this script.
	local lock
	exec {lock}>>"$VM_QEMU_LOCK"
	if ! flock -n "$lock"; then
		echo "vm: waiting for another test-bed guest on this machine ($VM_QEMU_LOCK)" >&2
		flock "$lock"
	fi
	# The time limit starts now that the lock is ours: waiting for others never counts against us.
	# stdin is /dev/null so that QEMU never puts the terminal into raw mode.
	echo "qemu $(date +%s.%N)" >>"$run/times"
	timeout -k 5 "$limit" \
		qemu-system-x86_64 -accel "tcg,thread=$VM_TCG_THREAD" -M pc -cpu max -smp 2 -m "$mem" ${VM_QEMU_EXTRA:-} \
		-nodefaults -display none -no-reboot \
		-kernel "$KERNEL" -initrd "$INITRD" -append "$append" \
		-serial "file:$run/console.log" -serial "$serial2" \
		-virtfs "local,path=$ROOT,mount_tag=host,security_model=passthrough,multidevs=remap" \
		"${repo_share[@]}" \
		-virtfs local,path="$run",mount_tag=run,security_model=passthrough,multidevs=remap \
		</dev/null &
	qemu=$!
	# timeout(1) puts itself and QEMU in a process group of their own, out of reach of the
	# terminal's ^C: pass interruptions on (timeout forwards them to QEMU).
	VM_INTERRUPTED=0
	trap 'VM_INTERRUPTED=1; kill -TERM "$qemu" 2>/dev/null' INT TERM HUP
	while kill -0 "$qemu" 2>/dev/null; do
		if [ "$seen" -eq 0 ] && [ -e "$run/started" ]; then
			echo "started $(date +%s.%N)" >>"$run/times"
			seen=1
		fi
		[ -z "$poll" ] || "$poll"
		sleep 0.2
	done
	wait "$qemu"
	rc=$?
	trap - INT TERM HUP
	exec {lock}>&-
	echo "ended $(date +%s.%N)" >>"$run/times"
	if [ "$VM_INTERRUPTED" -eq 1 ]; then
		echo "vm: interrupted; the guest was stopped" >&2
		exit 130
	fi
	return "$rc"
}

# vm_elapsed <run-dir> <from> <to>: seconds between two events of <run-dir>/times, or "?".
vm_elapsed() {
	awk -v from="$2" -v to="$3" '$1 == from { a = $2 } $1 == to { b = $2 }
		END { if (a && b) printf "%.1f", b - a; else printf "?" }' "$1/times" 2>/dev/null
}
