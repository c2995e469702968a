#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Second stage of the guest, run by the initramfs /init in the chroot (the host's root over 9p with
# the guest's own proc/sys/dev/tmp/run). Loads what criu needs, then runs the run directory's
# command from the repo root and leaves its exit status for the host.
#
# Usage (inside the guest only): guest.sh <repo> <run-dir> [<guest name>]
# The run directory (written by test/vm/boot.sh on the host) holds
#   command    the bash script to run
#   timeout    its time limit in seconds
# and receives
#   boot-times guest uptime at each step of the setup
#   started    created just before the command starts (the host notes when it appears)
#   rc         the command's exit status (124: it ran out of time)
#   dmesg      the guest kernel log after the command
# The command's stdout and stderr go to the second serial port, which the host shows or stores.

set -u
repo=$1
run=$2
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb
# VM_GUEST names the guest (bookworm, trixie) for the scenarios.
export VM_GUEST=${3:-bookworm} VM_RUN_DIR=$run

# Guest uptime at each setup step, in <run-dir>/boot-times (builtins only: no process to start).
mark() {
	local up rest
	read -r up rest </proc/uptime
	echo "$1 $up" >>"$run/boot-times"
}
say() { echo "vm-guest: $*"; }

mark chroot
# criu probes all of these: the socket-diag modules to dump sockets, nf_tables for network locking,
# tun and veth for its kerndat checks, binfmt_misc (criu 4.x dumps its mounts; a Debian 13 node
# has it loaded). Loaded together: one modprobe is cheaper than thirteen.
modprobe -a unix_diag inet_diag tcp_diag udp_diag netlink_diag af_packet_diag \
	nfnetlink nf_tables nft_chain_nat nf_conntrack ip_tables iptable_filter tun veth binfmt_misc ||
	say "some of criu's modules did not load"
mark modules

# A guest with a root of its own runs our programs as built in that root (test/vm/trixie-build.sh):
# that build is shown at the repo's own paths, so every scenario finds them where it always does.
guest_build=$repo/build/vm/$VM_GUEST/src/test
if [ "$VM_GUEST" != bookworm ]; then
	for d in emu e2e; do
		mount --bind "$guest_build/$d" "$repo/test/$d" || say "cannot show the $VM_GUEST build of test/$d"
	done
fi

# The initramfs set the second serial port raw (no CR added to each LF).
out=/dev/ttyS1
[ -c "$out" ] || out=/dev/console
limit=600
read -r limit <"$run/timeout"
cd "$repo" || { say "no repo at $repo"; exit 1; }
mark command
: >"$run/started"
timeout -k 10 "$limit" bash "$run/command" </dev/null >"$out" 2>&1
rc=$?
[ "$rc" -ne 124 ] || say "the command ran out of time (${limit}s)"
echo "$rc" >"$run/rc.tmp" && mv "$run/rc.tmp" "$run/rc"
dmesg >"$run/dmesg" 2>/dev/null
sync
exit "$rc"
