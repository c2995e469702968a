#!/usr/bin/env bash
# Installs everything the build, the unit tests and the QEMU test bed need, from Debian's
# packages. Idempotent: packages already present are not touched, so a second run costs a second.
set -euo pipefail

abi=""
packages=(
	# build
	g++ make pkg-config criu libprotobuf-c-dev protobuf-c-compiler
	libdrm-dev libnuma-dev libxxhash-dev
	# unit tests and benchmarks
	googletest libgtest-dev libbenchmark-dev
	# QEMU test bed (guest kernel comes as a package we download, not install; the trixie guest's
	# root is built from Debian's archive with mmdebstrap)
	qemu-system-x86 busybox-static cpio kmod xz-utils zstd iproute2 mmdebstrap
	# peak RSS of criu in the e2e resource scenarios (GNU time)
	time
	# fuzzing the decoders (make fuzz: libFuzzer, ASan, UBSan); the shader core's test programs
	# (LLVM 14's assembler for gfx908/gfx90a, 15's, the oldest that knows it, for gfx942)
	clang-14 llvm-14 llvm-15
	# the Debian package (make deb) and its checks
	dpkg-dev debhelper lintian
	# GPU containers in the guest (Debian's crun has no CRIU support: runc checkpoints)
	podman runc crun conmon containernetworking-plugins
	# real GPU clients run inside the guest
	libhsakmt1 libhsakmt-dev rocminfo libhsa-runtime64-1 libhsa-runtime-dev libamdhip64-dev
)
# make check-full (--full): bookworm's hipcc (with its clang 15), which builds the HIP workload with
# GPU kernels for the bookworm guest's ROCm 5.2.3 (e2e/65 under criu 3.17.1 and 4.2.1)
[ "${1:-}" != --full ] || packages+=(hipcc)

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

# The guest runs the kernel linux-image-amd64 points at today; its headers build the emulator.
if ! abi=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\(.*\)$/\1/p' | head -n1) || [ -z "$abi" ]; then
	as_root apt-get update -qq
	abi=$(apt-cache depends linux-image-amd64 | sed -n 's/.*Depends: linux-image-\(.*\)$/\1/p' | head -n1)
fi
[ -n "$abi" ] || { echo "install-deps: cannot resolve the kernel ABI of linux-image-amd64" >&2; exit 1; }
dpkg-query -W -f='${Status}' "linux-headers-$abi" 2>/dev/null | grep -q 'install ok installed' ||
	missing+=("linux-headers-$abi")

# QEMU from bookworm-backports (10.0; bookworm's own is 7.2): it runs the guests' code about a third
# faster under TCG (test/vm/boot.sh). Debian's archive keeps backports in a suite of its own, which
# this list adds; only this package is taken from it.
backports=/etc/apt/sources.list.d/criu-amdgpu-plugin-backports.list
qemu_major=$(dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null | sed -n 's/^[0-9]*:\{0,1\}\([0-9]*\)\..*/\1/p')
qemu_from_backports=0
if grep -q '^VERSION_CODENAME=bookworm' /etc/os-release && [ "${qemu_major:-0}" -lt 10 ]; then
	qemu_from_backports=1
	[ -e "$backports" ] || echo 'deb http://deb.debian.org/debian bookworm-backports main' | as_root tee "$backports" >/dev/null
fi

if [ ${#missing[@]} -eq 0 ] && [ "$qemu_from_backports" -eq 0 ]; then
	exit 0
fi
echo "install-deps: installing ${missing[*]}${missing[*]:+ }$([ "$qemu_from_backports" -eq 0 ] || echo 'qemu-system-x86 (bookworm-backports)')"
as_root apt-get update -qq
[ ${#missing[@]} -eq 0 ] ||
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[ "$qemu_from_backports" -eq 0 ] ||
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-x86 >/dev/null
