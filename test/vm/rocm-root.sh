#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Builds a root holding one ROCm userland as Debian ships it, from Debian's archive, into
# build/vm/rocm-<version>/root/: the runtime (ROCr), HIP, rocminfo, and what building our ROCm
# clients and workloads against them needs (the -dev packages, gcc, make, libc6-dev, libdrm-dev).
# Nothing else: no recommends, no kernel; the guest's kernel and the emulator are the trixie
# guest's. The root serves two ways: as a chroot for bare processes in the trixie guest
# (test/vm/scenarios/33-rocm-userlands.sh), and as what a container image is made from
# (`tar -C <root> -c . | podman import - <name>`).
#
# Versions:
#   6.4    Debian sid: ROCr and HIP 6.4.3 (rocminfo is sid's, which runs on ROCr >= 6.4.3)
#   7.2    Debian experimental over sid: ROCr, HIP and comgr 7.2.4 (rocminfo 7.2.4 is sid's). Only
#          the ROCm source packages below are pinned to experimental (apt preferences in the root,
#          /etc/apt/preferences.d/rocm); everything else, libc and the compiler too, is sid's.
#
# The build root (`build`): HIP device code needs hipcc, its clang and lld and the device libraries
# (Debian's hipcc 7.0.2 pulls in clang-21, llvm-21, lld-21, rocm-device-libs-21: 63 MiB to download,
# 330 MiB installed). The programs run in the root without them, so they go into a copy of the root,
# build/vm/rocm-<version>/build-root/, which only test/vm/rocm-build.sh uses: the root the guest runs
# stays as it was. The copy gets them from the same archive with apt, chrooted (the root keeps
# mmdebstrap's sources list): the versions the root holds satisfy hipcc's dependencies, so apt adds
# the compiler and changes nothing else. About 10 s on top of the root's 30 to 40.
#
# Cached: a second run only checks the stamp (the version, the package list, this script), so it
# costs a second. apt runs with a sources list of our own; Debian's sid Release file can be past its
# Valid-Until date on the mirror, so for sid (and experimental) only, apt is told not to check
# it. Signatures are checked for every suite, against the archive keyring.
#
# Usage: test/vm/rocm-root.sh [-q] <version> [build]     prints the root's path (the build root's)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
quiet=0
[ "${1:-}" = "-q" ] && { quiet=1; shift; }
version=${1:-}
want=${2:-root}

say() { [ "$quiet" -eq 1 ] || echo "rocm-root: $*" >&2; }
die() { echo "rocm-root: $*" >&2; exit 1; }
# shellcheck source=test/vm/root-lib.sh
. "$top/test/vm/root-lib.sh"

case "$version" in
6.4)
	suite=sid
	# HIP 6.x's runtime library is libamdhip64-6; its -dev brings the headers and comgr's.
	packages=(libhsa-runtime64-1 libamdhip64-6 rocminfo libhsa-runtime-dev libamdhip64-dev)
	pinned=()
	# hipcc 7.0.2 is sid's, made for HIP 6.4.3 (it depends on libamdhip64-dev >= 6.4.3)
	compiler=(hipcc)
	;;
7.2)
	suite=sid
	# HIP 7.x's runtime library is libamdhip64-7; it needs comgr 7.2 (rocm-llvm), which sid lacks.
	packages=(libhsa-runtime64-1 libamdhip64-7 rocminfo libhsa-runtime-dev libamdhip64-dev)
	pinned=(rocr-runtime rocm-hipamd rocm-llvm rocm-core rocprofiler-register)
	# No build root yet: experimental's hipcc (7.2.4, rocm-llvm's, so pinned with it) brings clang-22;
	# the kernel workload is built for the 6.4 root only.
	compiler=()
	;;
*) die "unknown ROCm version '$version' (6.4, 7.2)" ;;
esac
# Building the clients and workloads in the root (test/vm/rocm-build.sh).
packages+=(gcc make libc6-dev libdrm-dev)

case "$want" in
root) ;;
build) [ "${#compiler[@]}" -gt 0 ] || die "ROCm $version has no build root (no hipcc for it)" ;;
*) die "unknown kind of root '$want' (root, build)" ;;
esac
[ "$(id -u)" -eq 0 ] || die "must run as root (mmdebstrap --mode=root)"
root_keyring

out=$top/build/vm/rocm-$version
root=$out/root
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9

stamp="$version $suite ${packages[*]} ${pinned[*]} $(sha256sum "$0" | cut -c1-16)"

make_root() {
	local sources
	root_mirror
	sources=("deb [signed-by=$KEYRING $(root_valid_until "$suite")] $MIRROR $suite main")
	if [ "${#pinned[@]}" -gt 0 ]; then
		# Experimental's packages are never chosen by default (its Release says NotAutomatic); the
		# ROCm ones we want are pinned above sid's, by source package, before apt resolves anything.
		sources+=("deb [signed-by=$KEYRING $(root_valid_until experimental)] $MIRROR experimental main")
		printf 'Package: %s\nPin: release a=experimental\nPin-Priority: 990\n' "${pinned[*]/#/src:}" >"$out/rocm.pref"
		sources+=("--setup-hook=mkdir -p \"\$1/etc/apt/preferences.d\" && cp '$out/rocm.pref' \"\$1/etc/apt/preferences.d/rocm\"")
	fi
	say "building the root: ROCm $version from Debian $suite${pinned:+ and experimental} (mmdebstrap; a few minutes)"
	root_debootstrap "$suite" "$root.tmp" "$out/mmdebstrap.log" "$(
		IFS=,
		echo "${packages[*]}"
	)" "${sources[@]}"

	# What the root holds, for the record and the scenario's messages.
	chroot "$root.tmp" dpkg-query -W -f '${Package} ${Version}\n' "${packages[@]}" >"$root.tmp/.testbed-versions" ||
		die "the root lacks one of: ${packages[*]}"
	echo "$stamp" >"$root.tmp/.testbed-root"
	root_remove "$root"
	mv "$root.tmp" "$root"
	say "ready: $root"
}

# The root's copy with the compiler. apt must leave the root's packages as they are: what is built
# here links against the HIP that runs in the root.
make_build_root() {
	local log=$out/build-root.log
	say "building the build root: a copy of the root with ${compiler[*]} (apt; about 10 s)"
	root_remove "$build.tmp"
	cp -a --reflink=auto "$root" "$build.tmp"
	root_run "$build.tmp" sh -ec '
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
		apt-get clean
		rm -rf /var/lib/apt/lists/*
	' sh "${compiler[@]}" >"$log" 2>&1 ||
		{ tail -n 30 "$log" >&2; die "apt in the build root failed (log: ${log#"$top"/})"; }
	chroot "$build.tmp" dpkg-query -W -f '${Package} ${Version}\n' "${packages[@]}" |
		diff "$root/.testbed-versions" - >>"$log" ||
		die "apt changed the root's packages in the build root (log: ${log#"$top"/})"
	chroot "$build.tmp" dpkg-query -W -f '${Package} ${Version}\n' "${compiler[@]}" >>"$build.tmp/.testbed-versions"
	echo "$build_stamp" >"$build.tmp/.testbed-root"
	root_remove "$build"
	mv "$build.tmp" "$build"
	say "ready: $build"
}

if [ ! -e "$root/.testbed-root" ] || [ "$(cat "$root/.testbed-root")" != "$stamp" ]; then
	make_root
fi
if [ "$want" = root ]; then
	echo "$root"
	exit 0
fi
build=$out/build-root
build_stamp="$stamp ${compiler[*]} $(sha256sum <"$root/.testbed-versions" | cut -c1-16)"
if [ ! -e "$build/.testbed-root" ] || [ "$(cat "$build/.testbed-root")" != "$build_stamp" ]; then
	make_build_root
fi
echo "$build"
