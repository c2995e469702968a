#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The emulator's own ioctl test (test/emu/tests/kfd_ioctl_test: the KFD ABI, CRIU ops, fault
# injection) on every preset; its TAP results become ours, prefixed with the preset.
# timeout: 600
. test/vm/lib.sh

test_bin=test/emu/tests/kfd_ioctl_test
emu_require "$test_bin"

dmesg_mark "20-emu-ioctl: begin"
for p in mi100 2xmi210 mi250x 2xmi300x cpx8; do
	emu_tap_relay "$p" "the test" timeout 240 "$test_bin"
done
tap_dmesg_clean "20-emu-ioctl: begin"
tap_done
