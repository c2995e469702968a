# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# ROCm userlands newer than the guest's own, for the scenarios that checkpoint their processes
# (trixie guest). Each is a root Debian's archive built (test/vm/rocm-root.sh <version>), with our
# workloads built in it against its ROCm (test/vm/rocm-build.sh <version>). Its processes run
# chrooted into that root, as a bare process would run on a node where that ROCm is installed; the
# root sees the guest's /dev, /proc, /sys and /tmp, and the checkout at its own path. Those binds
# are made in the guest's mount namespace of the scenario, where criu runs too: the files criu
# finds open in the task are files criu can open itself. Sourced by test/e2e/lib.sh.
#
#   userland_require                  skip (77) outside the trixie guest or without a built root
#   userland_versions                 the versions whose root and workloads are built ("6.4 ..."),
#                                     of those ROCM_USERLANDS names if set (make check: "6.4")
#   userland_workloads <version> [--kernels]
#                                     the workloads built in it ("rocr hip"); with --kernels also
#                                     those whose GPUs execute shader code (hip_kernel: HIP kernels
#                                     built with hipcc, 6.4 only), which need the emulator's shader
#                                     core; wl_start starts any of them (wl_start hip_kernel <name>)
#   userland_label <version>          "ROCm 6.4 (libhsa-runtime64-1 6.4.3+dfsg-5)"
#   userland_criu_dumps <version>     false where the criu in PATH cannot dump its processes: criu
#                                     before 4.2, with a root whose glibc (2.42 and newer, sid's)
#                                     puts a guard region in every thread stack (MADV_GUARD_INSTALL)
#   userland_private_mounts "$@"      re-execute the scenario in a mount namespace of its own, so
#                                     that every bind vanishes with it
#   userland_enter <version>          bind the guest's directories into the root; sets WL_ROOT and
#                                     WL_BIN, which wl_start then uses (chroot, the root's
#                                     workloads); false, with a message, if a bind fails
#   userland_leave                    unbind them; unsets WL_ROOT and WL_BIN

USERLAND_DIR=$VM_REPO/build/vm

userland_require() {
	[ "${VM_GUEST:-bookworm}" = trixie ] || { echo "the ROCm userland roots run in the trixie guest"; exit 77; }
	[ -n "$(userland_versions)" ] || { echo "no ROCm userland root is built (test/vm/rocm-build.sh 6.4)"; exit 77; }
}

userland_versions() {
	local d v out=()
	for d in "$USERLAND_DIR"/rocm-*/; do
		v=${d%/}
		v=${v##*/rocm-}
		[[ -z "${ROCM_USERLANDS:-}" || " $ROCM_USERLANDS " == *" $v "* ]] || continue
		[ -e "$d/root/.testbed-root" ] && [ -x "$d/src/test/e2e/bin/rocr_workload" ] && out+=("$v")
	done
	echo "${out[@]}"
}

userland_workloads() {
	local w out=() all=(rocr hip)
	[ "${2:-}" != --kernels ] || all+=(hip_kernel)
	for w in "${all[@]}"; do
		[ ! -x "$USERLAND_DIR/rocm-$1/src/test/e2e/bin/${w}_workload" ] || out+=("$w")
	done
	echo "${out[@]}"
}

userland_label() {
	echo "ROCm $1 ($(grep '^libhsa-runtime64-1 ' "$USERLAND_DIR/rocm-$1/root/.testbed-versions"))"
}

userland_private_mounts() {
	if [ -z "${USERLAND_UNSHARED:-}" ]; then
		USERLAND_UNSHARED=1 exec unshare --mount --propagation private "$0" "$@"
	fi
}

userland_criu_dumps() {
	local libc
	libc=$(awk '/^Package: libc6$/ { p = 1 } p && /^Version:/ { print $2; exit }' \
		"$USERLAND_DIR/rocm-$1/root/var/lib/dpkg/status")
	dpkg --compare-versions "$(criu_version)" ge 4.2 || dpkg --compare-versions "$libc" lt 2.42
}

USERLAND_MOUNTS=()

userland_enter() {
	local version=$1 root=$USERLAND_DIR/rocm-$1/root what
	userland_leave
	mkdir -p "$root$VM_REPO"
	for what in "--rbind /dev dev" "-t proc proc proc" "--rbind /sys sys" "--bind /tmp tmp" \
		"--bind $VM_REPO ${VM_REPO#/}"; do
		# shellcheck disable=SC2086 # the words of one mount
		set -- $what
		if ! mount "${@:1:$#-1}" "$root/${*: -1}"; then
			log "ROCm $version: mount $what into $root failed"
			userland_leave
			return 1
		fi
		USERLAND_MOUNTS=("$root/${*: -1}" "${USERLAND_MOUNTS[@]}")
	done
	# shellcheck disable=SC2034 # wl_start's
	WL_ROOT=$root
	# shellcheck disable=SC2034 # wl_start's
	WL_BIN=$USERLAND_DIR/rocm-$version/src/test/e2e/bin
}

userland_leave() {
	local m
	for m in "${USERLAND_MOUNTS[@]}"; do
		umount -R "$m" || umount -R -l "$m"
	done
	USERLAND_MOUNTS=()
	unset WL_ROOT WL_BIN
}
