#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The emulator's own ioctl test (test/emu/tests/kfd_ioctl_test: the KFD ABI, CRIU ops, fault
# injection) on every preset; its TAP results become ours, prefixed with the preset. The MI300X in
# SPX mode (2xmi300x, a queue on 8 XCCs) where the kernel is one that drives MI300 (6.5 and newer,
# the trixie guest: the test learns the XCCs from the topology's num_xcc).
# timeout: 600
. test/vm/lib.sh

test_bin=test/emu/tests/kfd_ioctl_test
emu_require "$test_bin"

dmesg_mark "20-emu-ioctl: begin"
presets="mi100 2xmi210 mi250x cpx8"
[ "${VM_GUEST:-bookworm}" = bookworm ] || presets+=" 2xmi300x"
for p in $presets; do
	emu_tap_relay "$p" "the test" timeout 240 "$test_bin"
done
tap_dmesg_clean "20-emu-ioctl: begin"
tap_done
