#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Builds the root of the test bed's second guest, today's stack: Debian 13 (trixie) with the
# newest kernel Debian ships for it (trixie-backports), from Debian's archive, into
# build/vm/trixie/root/. Cached: a second run only checks the stamp (the package list and the
# kernel), so it costs a second.
#
# What the root holds, and why:
#   - trixie's own packages: criu 4.1.1, Podman 5 with crun, ROCm's runtime and rocminfo as trixie
#     ships them, and the libraries the host-built plugin and workloads load;
#   - the trixie-backports kernel, unpacked (never installed: no initramfs is built in the root),
#     its module tree in /lib/modules/<abi>/ with depmod run, and its headers installed with the
#     compiler they were built with, so that the emulator is built in the root against that
#     kernel's own headers (test/vm/guest-build.sh);
#   - criu 4.3 (Debian experimental) in /opt/criu-4.3/: its binary needs libraries newer than
#     trixie's (libnet 9, libnl 3.11), so they are unpacked beside it and a wrapper puts them on
#     the loader's path for criu alone (`criu` there is the wrapper);
#   - the container engines operators run today, from sid: Docker 28.5 (docker.io, docker-cli),
#     containerd 2.1 (with its CRI plugin) and runc 1.3. They are Go programs that need nothing
#     newer than trixie's C library, so they are installed as packages, and every other package
#     comes from trixie (apt's default release);
#   - what the project's CRI client is built with (test/e2e/cri/): trixie's gRPC and protobuf for
#     C++, and the CRI's own definition, api.proto, unpacked from sid's golang-k8s-cri-api-dev
#     into /opt/cri-api (the package's Go code and its 150 Go build dependencies are not needed);
#   - what the package is built and checked with (make deb in the root: debhelper, lintian).
#
# apt runs with a sources list of our own. Debian's sid and experimental Release files can be past
# their Valid-Until date on the mirror: for those two suites only, apt is told not to check it.
# Signatures are checked for every suite, against the archive keyring.
#
# Usage: test/vm/trixie-root.sh [-q]     prints the root's path
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/build/vm/trixie
root=$out/root
aptdir=$out/apt
quiet=0
[ "${1:-}" = "-q" ] && quiet=1

say() { [ "$quiet" -eq 1 ] || echo "trixie-root: $*" >&2; }
die() { echo "trixie-root: $*" >&2; exit 1; }
# shellcheck source=test/vm/root-lib.sh
. "$top/test/vm/root-lib.sh"

[ "$(id -u)" -eq 0 ] || die "must run as root (mmdebstrap --mode=root, chroot)"
root_keyring
keyring=$KEYRING

# The packages of the root. The kernel's own packages are added below, by ABI.
packages=(
	# what the scenarios and the guest's setup run
	procps psmisc kmod iproute2 iptables nftables time zstd xz-utils file busybox-static
	# the benchmarks' rate-limited sink: ext4 on a loop device (test/bench/sink-lib.sh)
	e2fsprogs
	# the criu users of trixie run, and its containers
	criu podman crun conmon catatonit netavark libcriu2
	# libraries of the host-built plugin and workloads
	libprotobuf-c1 libdrm2 libdrm-amdgpu1 libnuma1 libstdc++6
	# ROCm as trixie ships it (6.1): runtime, thunk, rocminfo
	libhsa-runtime64-1 libhsakmt1 rocminfo
	# building the emulator against the guest's kernel (its headers bring their compiler), its
	# client programs and the workloads against trixie's libraries (test/vm/trixie-build.sh)
	make gcc libc6-dev libdrm-dev libhsakmt-dev libhsa-runtime-dev libamdhip64-dev
	# the container engines of sid (see above)
	docker.io/sid docker-cli/sid containerd/sid runc/sid
	# the CRI client (test/e2e/cri/), and the registry a cluster pulls its images from (a
	# restore through the CRI pulls the checkpoint's base image again)
	g++ pkgconf libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc docker-registry
	# the package, built for trixie (make deb): its Build-Depends and lintian
	build-essential debhelper dpkg-dev libcriu-dev libnuma-dev libprotobuf-c-dev libxxhash-dev protobuf-c-compiler lintian
)

mkdir -p "$out"
exec 9>"$out/.lock"
flock 9

root_mirror
mirror=$MIRROR

# apt on the host with our own lists: resolves the kernel ABI and downloads what is unpacked
# rather than installed (the kernel, criu 4.3 and its newer libraries).
mkdir -p "$aptdir/lists/partial" "$aptdir/cache/archives/partial" "$aptdir/debs"
cat >"$aptdir/sources.list" <<LIST
deb [signed-by=$keyring] $mirror trixie main
deb [signed-by=$keyring] $mirror trixie-backports main
deb [signed-by=$keyring check-valid-until=no] $mirror sid main
deb [signed-by=$keyring check-valid-until=no] $mirror experimental main
LIST
apt_opts=(-o "Dir::Etc::SourceList=$aptdir/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$aptdir/lists" -o "Dir::Cache=$aptdir/cache"
	-o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
if [ -z "$(find "$aptdir/lists" -maxdepth 1 -name '*trixie-backports*Packages*' -mmin -1440 2>/dev/null)" ]; then
	say "apt-get update (trixie, trixie-backports, sid, experimental)"
	apt-get "${apt_opts[@]}" update -qq >"$aptdir/update.log" 2>&1 ||
		{ cat "$aptdir/update.log" >&2; die "apt-get update with our own sources list failed"; }
fi

# The newest kernel for trixie: what linux-image-amd64 in trixie-backports depends on.
abi=$(apt-cache "${apt_opts[@]}" depends linux-image-amd64/trixie-backports 2>/dev/null |
	sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n1)
[ -n "$abi" ] || die "cannot resolve the kernel of linux-image-amd64 in trixie-backports"
packages+=("linux-headers-$abi")

stamp="$abi ${packages[*]} criu-4.3 $(sha256sum "$0" | cut -c1-16)"
if [ -e "$root/.testbed-root" ] && [ "$(cat "$root/.testbed-root")" = "$stamp" ]; then
	echo "$root"
	exit 0
fi

# download <package...>: the newest .deb of each into $aptdir/debs, printed one per line.
download() {
	local p
	for p in "$@"; do
		rm -f "$aptdir/debs/${p%%/*}"_*.deb
		(cd "$aptdir/debs" && apt-get "${apt_opts[@]}" download -qq "$p" >/dev/null 2>"$aptdir/download.log") ||
			{ cat "$aptdir/download.log" >&2; die "cannot download $p"; }
		ls "$aptdir/debs/${p%%/*}"_*.deb
	done
}

say "building the root: trixie + kernel $abi (mmdebstrap; a few minutes)"
root_debootstrap trixie "$root.tmp" "$out/mmdebstrap.log" "$(
	IFS=,
	echo "${packages[*]}"
)" "deb [signed-by=$keyring] $mirror trixie main" "deb [signed-by=$keyring] $mirror trixie-backports main" \
	"deb [signed-by=$keyring $(root_valid_until sid)] $mirror sid main" --aptopt='APT::Default-Release "trixie"'

# The kernel, unpacked: image, modules and what they split into.
say "unpacking kernel $abi"
for deb in $(download "linux-image-$abi" "linux-modules-$abi" "linux-binary-$abi" 2>/dev/null ||
	download "linux-image-$abi"); do
	dpkg-deb -x "$deb" "$root.tmp"
done
[ -d "$root.tmp/lib/modules/$abi/kernel" ] || [ -d "$root.tmp/usr/lib/modules/$abi/kernel" ] ||
	die "no module tree for $abi in the root"
depmod -b "$root.tmp" "$abi"

# criu 4.3 from experimental, with the libraries it needs beyond trixie's.
say "unpacking criu 4.3 (experimental) into /opt/criu-4.3"
c43=$root.tmp/opt/criu-4.3
mkdir -p "$c43"
for deb in $(download criu/experimental libcompel1/experimental libnet9/sid libnl-3-200/sid); do
	dpkg-deb -x "$deb" "$c43/pkg"
done
"$c43/pkg/usr/sbin/criu" --version >/dev/null 2>&1 || true # (host glibc may be too old: not run here)
cat >"$c43/criu" <<'WRAP'
#!/bin/sh
# criu 4.3 from Debian experimental, with the libraries it needs beyond trixie's beside it.
here=/opt/criu-4.3/pkg
LD_LIBRARY_PATH=$here/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec "$here/usr/sbin/criu" "$@"
WRAP
chmod 0755 "$c43/criu"
chroot "$root.tmp" /opt/criu-4.3/criu --version | grep -q '^Version: 4\.3' ||
	die "criu 4.3 does not run in the root: $(chroot "$root.tmp" /opt/criu-4.3/criu --version 2>&1 | head -n3)"

# The CRI's definition (api.proto) from sid's Go package, unpacked (not installed).
say "unpacking the CRI's api.proto (golang-k8s-cri-api-dev, sid) into /opt/cri-api"
deb=$(download golang-k8s-cri-api-dev/sid)
mkdir -p "$aptdir/cri-api" "$root.tmp/opt/cri-api"
dpkg-deb -x "$deb" "$aptdir/cri-api"
proto=$(find "$aptdir/cri-api" -path '*/runtime/v1/api.proto' | head -n 1)
[ -n "$proto" ] || die "no runtime/v1/api.proto in $(basename "$deb")"
cp "$proto" "$root.tmp/opt/cri-api/api.proto"
echo "${deb##*/}" >"$root.tmp/opt/cri-api/source"
rm -rf "$aptdir/cri-api"

echo "$stamp" >"$root.tmp/.testbed-root"
root_remove "$root"
mv "$root.tmp" "$root"
say "ready: $root"
echo "$root"
