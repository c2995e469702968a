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
#
# Cached: a second run only checks the stamp (the version, the package list, this script), so it
# costs a second. apt runs with a sources list of our own; Debian's sid Release file can be past its
# Valid-Until date on the mirror, so for sid (and experimental) only, apt is told not to check
# it. Signatures are checked for every suite, against the archive keyring.
#
# Usage: test/vm/rocm-root.sh [-q] <version>     prints the root's path
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
quiet=0
[ "${1:-}" = "-q" ] && { quiet=1; shift; }
version=${1:-}

say() { [ "$quiet" -eq 1 ] || echo "rocm-root: $*" >&2; }
die() { echo "rocm-root: $*" >&2; exit 1; }

case "$version" in
6.4)
	suite=sid
	# HIP 6.x's runtime library is libamdhip64-6; its -dev brings the headers and comgr's.
	packages=(libhsa-runtime64-1 libamdhip64-6 rocminfo libhsa-runtime-dev libamdhip64-dev)
	;;
*) die "unknown ROCm version '$version' (6.4)" ;;
esac
# Building the clients and workloads in the root (test/vm/rocm-build.sh).
packages+=(gcc make libc6-dev libdrm-dev)

[ "$(id -u)" -eq 0 ] || die "must run as root (mmdebstrap --mode=root)"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing; run scripts/install-deps.sh"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "no Debian archive keyring at $keyring"

out=$top/build/vm/rocm-$version
root=$out/root
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9

stamp="$version $suite ${packages[*]} $(sha256sum "$0" | cut -c1-16)"
if [ -e "$root/.testbed-root" ] && [ "$(cat "$root/.testbed-root")" = "$stamp" ]; then
	echo "$root"
	exit 0
fi

mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || die "cannot find the Debian mirror in the machine's apt sources"
case "$suite" in
sid | experimental) valid="check-valid-until=no " ;;
*) valid= ;;
esac

# A root is only ever removed with nothing mounted inside it (an interrupted chroot build or
# scenario could leave the checkout or /proc bound there).
remove_root() {
	if findmnt -rn -o TARGET | grep -q "^$1\(/\|$\)"; then
		die "something is still mounted under $1: not removing it (findmnt | grep $1)"
	fi
	rm -rf "$1"
}

say "building the root: ROCm $version from Debian $suite (mmdebstrap; a few minutes)"
remove_root "$root.tmp"
mmdebstrap --mode=root --variant=minbase --quiet \
	--include="$(
		IFS=,
		echo "${packages[*]}"
	)" \
	--aptopt='APT::Install-Recommends "false"' \
	--customize-hook='rm -f "$1"/etc/machine-id' \
	"$suite" "$root.tmp" \
	"deb [signed-by=$keyring ${valid}] $mirror $suite main" >"$out/mmdebstrap.log" 2>&1 ||
	{ tail -n 30 "$out/mmdebstrap.log" >&2; die "mmdebstrap failed (log: ${out#"$top"/}/mmdebstrap.log)"; }

# What the root holds, for the record and the scenario's messages.
chroot "$root.tmp" dpkg-query -W -f '${Package} ${Version}\n' "${packages[@]}" >"$root.tmp/.testbed-versions" ||
	die "the root lacks one of: ${packages[*]}"
echo "$stamp" >"$root.tmp/.testbed-root"
remove_root "$root"
mv "$root.tmp" "$root"
say "ready: $root"
echo "$root"
