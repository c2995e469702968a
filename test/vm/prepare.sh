#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Prepares a QEMU test-bed guest into build/vm/ (the repo's build directory). Two guests:
#
#   bookworm (the default): Debian 12, the oldest stack we support. The guest chroots into the
#     host's own root over 9p. The kernel linux-image-amd64 depends on today is downloaded and
#     unpacked (never installed); its module tree is staged under the host's /lib/modules/<abi>/ +
#     depmod, so that modprobe works inside the guest (the host's own kernel has no module loading,
#     so nothing changes for the host).
#   trixie: Debian 13 with the newest kernel Debian ships for it, today's stack. Its root is built
#     from Debian's archive by test/vm/trixie-root.sh (build/vm/trixie/root/, kernel and modules
#     inside); the guest chroots into that root, with this checkout shared at its own path.
#
# For either: the bare vmlinux for a PVH boot and an initramfs (busybox-static, the virtio/9p
# modules, test/vm/initramfs-init as /init). Writes build/vm/guest-<guest>.env (GUEST, ROOT, ABI,
# KERNEL, INITRD) for the runners. Every step is skipped when its output is already there, so a
# second run costs about a second.
#
# Usage: test/vm/prepare.sh [-q] [bookworm|trixie]   (-q: print nothing on success; the guest
#        defaults to $VM_GUEST, else bookworm)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
vm="$top/build/vm"
quiet=0
[ "${1:-}" = "-q" ] && { quiet=1; shift; }
guest=${1:-${VM_GUEST:-bookworm}}

say() { [ "$quiet" -eq 1 ] || echo "prepare: $*"; }
die() { echo "prepare: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (it stages modules under /lib/modules)"
for tool in apt-cache apt-get dpkg-deb depmod modprobe cpio xz readelf flock; do
	command -v "$tool" >/dev/null || die "'$tool' is missing; run scripts/install-deps.sh"
done
case "$guest" in
bookworm | trixie) ;;
*) die "unknown guest '$guest' (bookworm or trixie)" ;;
esac
env_file="$vm/guest-$guest.env"

mkdir -p "$vm"
exec 9>"$vm/.prepare.lock"
flock 9

# extract_vmlinux <bzImage>: the payload, decompressed, on stdout. The payload starts at the first
# compression magic of the kind the kernel was built with.
extract_vmlinux() {
	local magic decomp off
	for kind in xz zstd gzip; do
		case $kind in
		xz) magic='\xfd7zXZ\x00' decomp="xz -dc --single-stream" ;;
		zstd) magic='\x28\xb5\x2f\xfd' decomp="zstd -dc" ;;
		gzip) magic='\x1f\x8b\x08' decomp="gzip -dc" ;;
		esac
		off=$(LC_ALL=C grep -obUaP "$magic" "$1" | head -n1 | cut -d: -f1)
		[ -n "$off" ] || continue
		tail -c +$((off + 1)) "$1" | $decomp 2>/dev/null
		return 0
	done
	return 1
}

# --- bookworm: the host's root, the kernel linux-image-amd64 points at on this machine ---------

resolve_abi() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n1
}

# Each kernel_<guest> sets root, abi, kernel (the bzImage) and vmlinux (where its bare ELF goes).
kernel_bookworm() {
	root=/
	# apt-cache costs most of a second: reuse the last answer until apt's package lists change.
	abi=
	if [ "$env_file" -nt /var/lib/apt/lists ]; then
		abi=$(sed -n 's/^ABI=//p' "$env_file")
	fi
	[ -n "$abi" ] || abi=$(resolve_abi)
	if [ -z "$abi" ]; then
		apt-get update -qq
		abi=$(resolve_abi)
	fi
	[ -n "$abi" ] || die "cannot resolve the kernel ABI of linux-image-amd64 (apt-cache depends)"

	local kdir="$vm/kernel-$abi" # the unpacked package
	kernel="$kdir/boot/vmlinuz-$abi"
	vmlinux="$vm/vmlinux-$abi"
	# Download and unpack linux-image-<abi>.
	if [ ! -e "$kdir/.unpacked" ]; then
		say "downloading linux-image-$abi"
		rm -rf "$kdir" "$vm/deb"
		mkdir -p "$vm/deb"
		# apt's _apt user must be able to write here, or apt-get warns about an unsandboxed download.
		chmod 0777 "$vm/deb"
		(cd "$vm/deb" && apt-get download -q "linux-image-$abi" >/dev/null 2>&1) ||
			{ apt-get update -qq && (cd "$vm/deb" && apt-get download -q "linux-image-$abi" >/dev/null); } ||
			die "apt-get download linux-image-$abi failed"
		local deb
		deb=$(ls "$vm/deb/linux-image-${abi}"_*.deb)
		say "unpacking $(basename "$deb")"
		mkdir -p "$kdir.tmp"
		dpkg-deb -x "$deb" "$kdir.tmp"
		rm -rf "$kdir"
		mv "$kdir.tmp" "$kdir"
		rm -rf "$vm/deb"
		touch "$kdir/.unpacked"
	fi
	[ -r "$kernel" ] || die "no kernel image at $kernel"

	local modsrc="$kdir/lib/modules/$abi"
	[ -d "$modsrc" ] || modsrc="$kdir/usr/lib/modules/$abi"
	[ -d "$modsrc/kernel" ] || die "no module tree in the unpacked package ($modsrc)"

	# Stage the module tree under the host's /lib/modules/<abi>/ (next to the headers' build and
	# source links, which stay). Other checkouts on this machine may do the same: lock globally.
	local moddst="/lib/modules/$abi"
	staged() {
		[ -e "$moddst/modules.dep" ] && [ -e "$moddst/.amdgpu-testbed-staged" ] &&
			cmp -s "$modsrc/modules.order" "$moddst/modules.order"
	}
	if ! staged; then
		exec 8>/tmp/amdgpu-vm-modules.lock
		flock 8
		if ! staged; then
			say "staging modules into $moddst and running depmod"
			mkdir -p "$moddst"
			cp -a "$modsrc/." "$moddst/"
			depmod "$abi"
			touch "$moddst/.amdgpu-testbed-staged"
		fi
		exec 8>&-
	fi
}

# --- trixie: a root of its own, built from Debian's archive, its kernel and modules inside ------

kernel_trixie() {
	local q=()
	[ "$quiet" -eq 0 ] || q=(-q)
	root=$("$top/test/vm/trixie-root.sh" "${q[@]}") || die "test/vm/trixie-root.sh failed"
	abi=$(cut -d' ' -f1 "$root/.testbed-root")
	[ -n "$abi" ] || die "the trixie root names no kernel ($root/.testbed-root)"
	kernel="$root/usr/lib/modules/$abi/vmlinuz"
	[ -r "$kernel" ] || kernel="$root/boot/vmlinuz-$abi"
	[ -r "$kernel" ] || die "no kernel image for $abi in the trixie root"
	vmlinux="$vm/trixie/vmlinux-$abi"
}

"kernel_$guest"
initrd="$vm/initrd-$abi.cpio"

# The bare ELF kernel inside the bzImage: QEMU boots it directly through its PVH entry point,
# which skips the in-guest decompression of the kernel (~4 s under TCG).
if [ ! -e "$vmlinux" ] && [ ! -e "$vmlinux.unusable" ]; then
	say "extracting vmlinux for a PVH boot"
	if extract_vmlinux "$kernel" >"$vmlinux.tmp" &&
		readelf -n "$vmlinux.tmp" 2>/dev/null | grep -q 'note type: (0x00000012)'; then
		mv "$vmlinux.tmp" "$vmlinux"
	else
		say "no PVH-bootable vmlinux in $(basename "$kernel"); booting the bzImage (slower)"
		rm -f "$vmlinux.tmp"
		touch "$vmlinux.unusable"
	fi
fi
[ -e "$vmlinux" ] && kernel=$vmlinux

# The initramfs: rebuilt when missing or older than its inputs.
init_src="$top/test/vm/initramfs-init"
if [ ! -e "$initrd" ] || [ "$init_src" -nt "$initrd" ] || [ "$0" -nt "$initrd" ] ||
	[ /bin/busybox -nt "$initrd" ]; then
	say "building the initramfs"
	LC_ALL=C od -An -tx1 -N4 /bin/busybox | grep -q '7f 45 4c 46' || die "/bin/busybox is not an ELF binary"
	if ldd /bin/busybox >/dev/null 2>&1; then
		die "/bin/busybox is dynamically linked; install busybox-static (scripts/install-deps.sh)"
	fi
	stage="$vm/initramfs.tmp"
	rm -rf "$stage"
	mkdir -p "$stage/bin" "$stage/modules" "$stage/proc" "$stage/sys" "$stage/dev" "$stage/newroot"
	cp /bin/busybox "$stage/bin/busybox"
	install -m 0755 "$init_src" "$stage/init"
	# Modules the 9p root needs, in dependency order as modprobe would load them, from the guest
	# root's module tree (what the kernel has built in needs nothing).
	: >"$stage/modules/order"
	for m in virtio_pci 9pnet_virtio 9p; do modprobe -d "$root" -S "$abi" --show-depends "$m"; done |
		awk '$1 == "insmod" { print $2 }' | awk '!seen[$0]++' |
		while read -r ko; do
			name=$(basename "$ko")
			case "$name" in
			*.ko.xz) xz -dc "$ko" >"$stage/modules/${name%.xz}" ;;
			*.ko.zst) zstd -qdc "$ko" >"$stage/modules/${name%.zst}" ;;
			*.ko) cp "$ko" "$stage/modules/$name" ;;
			*) die "unexpected module file $ko" ;;
			esac
			echo "${name%.ko*}.ko" >>"$stage/modules/order"
		done
	grep -q '^9p\.ko$' "$stage/modules/order" || die "the 9p module was not found for $abi"
	# Uncompressed: unpacking costs nothing under TCG, decompressing does.
	(cd "$stage" && find . | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) >"$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
	rm -rf "$stage"
fi

cat >"$env_file.tmp" <<ENV
GUEST=$guest
ROOT=$root
ABI=$abi
KERNEL=$kernel
INITRD=$initrd
ENV
mv "$env_file.tmp" "$env_file"
say "ready: $guest guest, kernel $abi ($vm)"
