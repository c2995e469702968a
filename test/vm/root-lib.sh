# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What the scripts that build a guest root from Debian's archive share (trixie-root.sh,
# rocm-root.sh) and what the scripts that build our programs inside such a root share
# (trixie-build.sh, rocm-build.sh). Sourced; the caller defines die().
#
#   root_mirror                     sets MIRROR: the Debian mirror of the machine's apt sources
#   root_keyring                    sets KEYRING: the archive keyring every suite is checked against
#   root_remove <dir>               rm -rf, refused while anything is mounted under <dir>
#   root_debootstrap <suite> <dir> <log> <packages, comma-separated> <sources line or option...>
#                                   mmdebstrap a minbase root, no recommends, no machine-id
#   root_run <root> <command...>    the command chrooted into <root>, in a mount namespace of its
#                                   own where this checkout is bound into <root> at its own path and
#                                   <root>'s /proc is mounted; nothing stays mounted afterwards
#
# Debian's sid and experimental Release files can be past their Valid-Until date on the mirror: a
# sources line for those suites carries check-valid-until=no (root_valid_until <suite> prints it),
# and no other suite does.

ROOT_LIB_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

root_mirror() {
	MIRROR=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
	[ -n "$MIRROR" ] || MIRROR=$(awk '$1 == "deb" && $2 ~ /debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
	[ -n "$MIRROR" ] || die "cannot find the Debian mirror in the machine's apt sources"
}

root_keyring() {
	KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -r "$KEYRING" ] || die "no Debian archive keyring at $KEYRING"
}

root_valid_until() {
	case "$1" in
	sid | unstable | experimental) echo "check-valid-until=no" ;;
	esac
}

# A root is only ever removed with nothing mounted inside it (an interrupted chroot build or
# scenario could leave the checkout or /proc bound there).
root_remove() {
	if findmnt -rn -o TARGET | grep -q "^$1\(/\|$\)"; then
		die "something is still mounted under $1: not removing it (findmnt | grep $1)"
	fi
	rm -rf "$1"
}

root_debootstrap() {
	local suite=$1 dir=$2 log=$3 include=$4
	shift 4
	command -v mmdebstrap >/dev/null || die "mmdebstrap is missing; run scripts/install-deps.sh"
	root_remove "$dir"
	mmdebstrap --mode=root --variant=minbase --quiet --include="$include" \
		--aptopt='APT::Install-Recommends "false"' \
		--customize-hook='rm -f "$1"/etc/machine-id' \
		"$suite" "$dir" "$@" >"$log" 2>&1 ||
		{ tail -n 30 "$log" >&2; die "mmdebstrap failed (log: ${log#"$ROOT_LIB_TOP"/})"; }
}

root_run() {
	local root=$1
	shift
	mkdir -p "$root$ROOT_LIB_TOP"
	unshare --mount --propagation private -- sh -ec '
		root=$1 top=$2
		shift 2
		mount --bind "$top" "$root$top"
		mount -t proc proc "$root/proc"
		exec chroot "$root" "$@"
	' sh "$root" "$ROOT_LIB_TOP" "$@"
}
