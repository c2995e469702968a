#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The Debian package: `make deb` builds it from a copy of the tree with dpkg-buildpackage and
# lintian reports no error or warning; it holds the plugin where criu looks by default
# (/usr/lib/criu), amdgpu-topology, the man pages and the docs; it depends on criu and on the
# shared libraries the plugin links; its plugin exports nothing but criu's descriptor, and its
# amdgpu-topology runs against a fixture tree. The guest side (installed with dpkg, criu finds
# the plugin without --libdir) is test/e2e/scenarios/70-installed-package.sh.
# Ends with "N passed, N failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1

passed=0 failed=0
pass() { echo "PASS: package: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: package: $1${2:+ ($2)}"; failed=$((failed + 1)); }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }

version=$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
deb=build/deb/criu-amdgpu-plugin_${version}_amd64.deb
log=build/deb.log
mkdir -p build
if make deb >"$log" 2>&1; then
	pass "make deb builds $deb, lintian reports no error or warning"
else
	fail "make deb builds the package and lintian is clean" "$(grep -E '^[EW]: |error' "$log" | head -n5 | tr '\n' ';')"
	echo "$passed passed, $failed failed"
	exit 1
fi

contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
for f in ./usr/lib/criu/amdgpu_plugin.so ./usr/bin/amdgpu-topology ./usr/share/man/man8/criu-amdgpu-plugin.8.gz \
	./usr/share/man/man1/amdgpu-topology.1.gz ./usr/share/doc/criu-amdgpu-plugin/copyright \
	./usr/share/doc/criu-amdgpu-plugin/README.md.gz ./usr/share/doc/criu-amdgpu-plugin/containers.md.gz; do
	check "it ships ${f#.}" grep -qxF "$f" <<<"$contents"
done

depends=$(dpkg-deb -f "$deb" Depends)
names=$(sed 's/ *([^)]*)//g; s/, */\n/g' <<<"$depends")
for d in criu libdrm-amdgpu1 libnuma1 libprotobuf-c1 libstdc++6; do
	check "it depends on $d ($depends)" grep -qxF "$d" <<<"$names"
done
check "its version is debian/changelog's ($version)" test "$(dpkg-deb -f "$deb" Version)" = "$version"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root"
exported=$(nm -D --defined-only "$root/usr/lib/criu/amdgpu_plugin.so" | awk '{ print $3 }' | tr '\n' ' ')
check "its plugin exports only criu's descriptor ($exported)" test "$exported" = "CR_PLUGIN_DESC "
out=$("$root/usr/bin/amdgpu-topology" --sysfs test/unit/fixtures/topology/mi210-2gpu-pcie 2>&1)
check "its amdgpu-topology reads a topology tree" grep -q '0x740f' <<<"$out"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
