#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The guest is what the test bed promises: in the bookworm guest Debian 12's 6.1 kernel and criu
# 3.17.1, in the trixie guest a Debian 13 kernel and the criu the suite asked for (VM_CRIU: 4.3 or
# trixie's 4.1.1); a criu whose base checks pass, modules that load, and the file systems criu and
# the scenarios rely on.
# timeout: 120
. test/vm/lib.sh

guest=${VM_GUEST:-bookworm}
abi=$(sed -n 's/^ABI=//p' "build/vm/guest-$guest.env" 2>/dev/null)
kernel=$(uname -r)
case "$guest:$kernel" in
bookworm:6.1.*-amd64) tap_ok "kernel is Debian 12's 6.1 ($kernel)" ;;
trixie:*+deb13-amd64) tap_ok "kernel is one Debian 13 ships ($kernel)" ;;
*) tap_not_ok "kernel is the $guest guest's" "uname -r says $kernel" ;;
esac
if [ -n "$abi" ] && [ "$abi" = "$kernel" ]; then
	tap_ok "kernel is the one prepare.sh resolved ($abi)"
else
	tap_not_ok "kernel is the one prepare.sh resolved" "guest-$guest.env says '$abi', uname -r '$kernel'"
fi

want=${VM_CRIU:-3.17.1}
version=$(criu --version | sed -n 's/^Version: //p')
if [ "$version" = "$want" ]; then
	tap_ok "criu is $want"
else
	tap_not_ok "criu is $want" "criu --version: $version"
fi

# `criu check` runs the checks every dump and restore needs; it prints "Looks good." only when all
# pass. Its two "exited, status=1" lines come from kerndat probing and are expected.
out=$(criu check 2>&1)
rc=$?
echo "$out" | sed 's/^/# criu check: /'
if [ "$rc" -eq 0 ] && echo "$out" | grep -qx 'Looks good.'; then
	tap_ok "criu check passes"
else
	tap_not_ok "criu check passes" "status $rc"
fi
unexpected=$(echo "$out" | grep -E '^(Error|Warn)' | grep -v 'util.c:[0-9]*): exited, status=1$')
if [ -z "$unexpected" ]; then
	tap_ok "criu check reports nothing but the two kerndat probe exits"
else
	tap_not_ok "criu check reports nothing but the two kerndat probe exits" "$unexpected"
fi

# The optional features the plugin and the scenarios lean on. (`criu check --all` ends in "some
# kernel features are missing" on this kernel without naming one: every feature below passes.)
for feature in mnt_id mem_dirty_track can_map_vdso pidfd_store timens network_lock_nftables \
	uffd-noncoop clone3_set_tid; do
	if criu check --feature "$feature" >/dev/null 2>&1; then
		tap_ok "criu feature $feature"
	else
		tap_not_ok "criu feature $feature" "$(criu check --feature "$feature" 2>&1 | tail -n1)"
	fi
done

# Modules: what guest.sh loaded for criu, and what the emulator needs next.
for m in unix_diag inet_diag tcp_diag netlink_diag af_packet_diag nf_tables tun veth; do
	if [ -d "/sys/module/$m" ]; then
		tap_ok "module $m is loaded"
	else
		tap_not_ok "module $m is loaded"
	fi
done
if modprobe drm && [ -d /sys/module/drm ]; then
	tap_ok "modprobe drm works"
else
	tap_not_ok "modprobe drm works"
fi

# File systems criu and scenarios expect from the guest, not from the host.
for fs in /proc:proc /sys:sysfs /dev:devtmpfs /dev/pts:devpts /tmp:tmpfs /run:tmpfs \
	/sys/kernel/debug:debugfs /sys/fs/cgroup:cgroup2; do
	dir=${fs%%:*} type=${fs#*:}
	if [ "$(findmnt -n -o FSTYPE --mountpoint "$dir")" = "$type" ]; then
		tap_ok "$dir is the guest's $type"
	else
		tap_not_ok "$dir is the guest's $type" "findmnt: $(findmnt -n --mountpoint "$dir")"
	fi
done
if [ "$(cat /sys/class/net/lo/operstate 2>/dev/null)" != down ] &&
	ip -o link show lo | grep -q 'UP'; then
	tap_ok "loopback is up"
else
	tap_not_ok "loopback is up"
fi

# RESULTS_DIR reaches the host: the suite reads this file back.
echo sanity >"$RESULTS_DIR/written-in-guest"
if [ "$(cat "$RESULTS_DIR/written-in-guest")" = sanity ]; then
	tap_ok "RESULTS_DIR is writable"
else
	tap_not_ok "RESULTS_DIR is writable"
fi
tap_done
