#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Builds what the trixie guest runs of our own, inside its root (chroot) with its compiler and
# headers: the emulator against the guest kernel's own headers (and so its own KFD and amdgpu
# uapi), the emulator's tests and real-client programs, the e2e workloads against trixie's ROCm
# and the CRI client, and the package for Debian 13 (make deb in the root: built with trixie's
# compiler against trixie's libraries and criu's header, checked by trixie's lintian) into
# build/vm/trixie/pkg/deb/, which the container scenarios install as an operator would. The
# package is built again only when a file it is made of is newer than it. Sources are copied to build/vm/trixie/src/test/{emu,e2e,common} (modification times kept,
# so make rebuilds only what changed); the guest shows that tree at the repo's test/emu and
# test/e2e (test/vm/guest.sh), so every scenario finds its programs where it always does.
#
# The checkout is bound into the root at its own path in a mount namespace of this script's own:
# nothing stays mounted when it ends.
#
# Usage: test/vm/trixie-build.sh [<log file>]
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
log=${1:-/dev/stderr}
die() { echo "trixie-build: $*" >&2; exit 1; }
# shellcheck source=test/vm/root-lib.sh
. "$top/test/vm/root-lib.sh"

root=$("$top/test/vm/trixie-root.sh" -q) || die "test/vm/trixie-root.sh failed"
abi=$(cut -d' ' -f1 "$root/.testbed-root")
src=$top/build/vm/trixie/src
mkdir -p "$src/test"
tar -C "$top/test" -cf - --exclude='*.o' --exclude='*.ko' --exclude='*.mod*' --exclude='.*.cmd' \
	--exclude=Module.symvers --exclude=modules.order --exclude=bin --exclude=gen-include \
	--exclude=kfd_ioctl_test --exclude='*_client' emu e2e common | tar -C "$src/test" -xf -

{
	root_run "$root" make -C "$src/test/emu" -j2 KDIR="/usr/src/linux-headers-$abi" &&
		root_run "$root" make -C "$src/test/e2e" -j2
} >"$log" 2>&1 || die "the build in the trixie root failed"
[ -e "$src/test/emu/amdgpu.ko" ] || die "no amdgpu.ko was built"

# The package, when it is older than any file it is made of (make deb's DEB_SRCS).
version=$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' "$top/debian/changelog")
deb=$top/build/vm/trixie/pkg/deb/criu-amdgpu-plugin_${version}_amd64.deb
srcs=(Makefile LICENSE README.md Documentation debian images plugins tools)
if [ ! -e "$deb" ] || [ -n "$(cd "$top" && find "${srcs[@]}" -newer "$deb" -type f ! -name '*.so' ! -name '*.o' -print -quit)" ]; then
	root_run "$root" make -C "$top" deb BUILD=build/vm/trixie/pkg JOBS=2 >>"$log" 2>&1 ||
		die "make deb in the trixie root failed (log: ${log#"$top"/})"
fi
[ -e "$deb" ] || die "make deb in the trixie root made no $deb"
