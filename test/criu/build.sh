#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Builds the criu the bookworm guest runs besides its packaged 3.17.1, from Debian's own source
# package, into build/criu/<label>/criu (cached: a second call costs nothing); the trixie guest has
# trixie's 4.1.1 and experimental's 4.3 in its root (test/vm/trixie-root.sh).
#
#   test/criu/build.sh 4.2.1      Debian unstable's criu source
#   test/criu/build.sh --header-4.3   unpacks criu 4.3's plugin header (Debian experimental's
#                                 libcriu-dev) into build/criu/4.3-header/; prints its directory
#
# The sources come through apt with a sources list of our own and its own Dir::State::Lists under
# build/criu/apt/, so the machine's apt configuration is never touched. Only the upstream `.orig`
# tarball is used. Build dependencies are bookworm's packages (installed here when missing).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/build/criu
aptdir=$out/apt

die() { echo "criu-build: $*" >&2; exit 1; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# apt with our own lists and cache: deb-src lines for the suites whose criu we build, and
# experimental's binary packages for the 4.3 header.
own_apt() {
	mkdir -p "$aptdir/lists/partial" "$aptdir/cache/archives/partial"
	local mirror
	mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
	[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
	[ -n "$mirror" ] || die "cannot find the Debian mirror in the machine's apt sources"
	cat >"$aptdir/sources.list" <<LIST
deb-src [check-valid-until=no] $mirror unstable main
deb [check-valid-until=no] $mirror experimental main
LIST
	APT_OPTS=(-o "Dir::Etc::SourceList=$aptdir/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$aptdir/lists" -o "Dir::Cache=$aptdir/cache"
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root)
	if [ -z "$(find "$aptdir/lists" -maxdepth 1 -name '*Sources*' -mmin -1440 2>/dev/null)" ]; then
		apt-get "${APT_OPTS[@]}" update -qq >"$aptdir/update.log" 2>&1 ||
			{ cat "$aptdir/update.log" >&2; die "apt-get update with our own sources list failed"; }
	fi
}

# orig_tarball <version>: downloads criu_<version>.orig.tar.xz (checked against the .dsc) into
# build/criu/src/ and prints its path.
orig_tarball() {
	local version=$1 dir=$out/src tar
	tar=$dir/criu_$version.orig.tar.xz
	if [ ! -s "$tar" ]; then
		own_apt
		mkdir -p "$dir"
		# The Debian part of the source package is not needed (and not always on the mirror): fetch
		# the upstream tarball alone, checked against the checksum in the Sources index.
		local line url sum
		line=$(apt-get "${APT_OPTS[@]}" source --print-uris -qq "criu=$version-1" 2>/dev/null | grep "criu_$version.orig.tar" | head -n1)
		[ -n "$line" ] || die "Debian's sources have no criu $version (apt-get source --print-uris)"
		url=$(awk '{ gsub(/\x27/, "", $1); print $1 }' <<<"$line")
		sum=$(awk '{ print $4 }' <<<"$line")
		/usr/lib/apt/apt-helper download-file "$url" "$tar.part" "$sum" >"$dir/source-$version.log" 2>&1 ||
			{ cat "$dir/source-$version.log" >&2; die "cannot download $url"; }
		mv "$tar.part" "$tar"
		[ -s "$tar" ] || die "Debian's criu $version source has no $tar"
	fi
	echo "$tar"
}

build_deps() {
	local p missing=()
	for p in gcc make pkg-config libbsd-dev libcap-dev libgnutls28-dev libnet1-dev libnftables-dev \
		libnl-3-dev libprotobuf-c-dev libprotobuf-dev protobuf-c-compiler protobuf-compiler \
		python3 uuid-dev xz-utils; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "criu-build: installing ${missing[*]}" >&2
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# build <label> <debian version>
build() {
	local label=$1 version=$2 dest=$out/$1 tar work stamp
	stamp=$version
	if [ -x "$dest/criu" ] && [ "$(cat "$dest/stamp" 2>/dev/null)" = "$stamp" ]; then
		echo "$dest/criu"
		return 0
	fi
	build_deps
	tar=$(orig_tarball "$version")
	work=$out/work-$label
	rm -rf "$work" "$dest"
	mkdir -p "$work"
	tar -xf "$tar" -C "$work" --strip-components=1
	echo "criu-build: building criu $label (log: ${work#"$top"/}/build.log)" >&2
	make -C "$work" -j"$(nproc)" criu >"$work/build.log" 2>&1 ||
		{ tail -n 30 "$work/build.log" >&2; die "criu $label did not build"; }
	mkdir -p "$dest"
	install -m 0755 "$work/criu/criu" "$dest/criu"
	echo "$stamp" >"$dest/stamp"
	rm -rf "$work"
	echo "$dest/criu"
}

header_43() {
	local dest=$out/4.3-header deb
	if [ ! -s "$dest/criu/criu-plugin.h" ]; then
		own_apt
		mkdir -p "$out/deb" "$dest/criu"
		(cd "$out/deb" && apt-get "${APT_OPTS[@]}" download -qq "libcriu-dev/experimental" >/dev/null 2>"$out/deb/download.log") ||
			{ cat "$out/deb/download.log" >&2; die "cannot download experimental's libcriu-dev"; }
		deb=$(ls "$out"/deb/libcriu-dev_4.3*.deb 2>/dev/null | head -n1)
		[ -n "$deb" ] || die "experimental's libcriu-dev is not criu 4.3 any more"
		rm -rf "$out/deb/x"
		dpkg-deb -x "$deb" "$out/deb/x"
		install -m 0644 "$out/deb/x/usr/include/criu/criu-plugin.h" "$dest/criu/criu-plugin.h"
	fi
	echo "$dest"
}

case "${1:-}" in
4.2.1) build 4.2.1 4.2.1 ;;
--header-4.3) header_43 ;;
*) die "usage: $0 4.2.1|--header-4.3" ;;
esac
