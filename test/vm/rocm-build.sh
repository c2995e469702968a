#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Builds our ROCm programs inside a ROCm userland's root (test/vm/rocm-root.sh), with its compiler
# and against its ROCm: the emulator's ROCm clients (test/emu/clients/rocr_client, hip_client) and
# the ROCm runtime and HIP workloads (test/e2e/bin/rocr_workload, hip_workload) and the job of ranks
# that share GPU memory (ipc_workload). Where the version has a build root (rocm-root.sh <version>
# build: the root's copy with hipcc; 6.4), also the workload with HIP device code
# (hip_kernel_workload), compiled there and run in the root like the others. Sources are copied to
# build/vm/rocm-<version>/src/test/{emu/clients,e2e,common} (modification times kept, so make
# rebuilds only what changed); the programs are run chrooted into that root, which sees the
# checkout at its own path (test/vm/scenarios/33-rocm-userlands.sh).
#
# The checkout is bound into the root at its own path in a mount namespace of this script's own:
# nothing stays mounted when it ends.
#
# Usage: test/vm/rocm-build.sh <version> [<log file>]
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
version=${1:-}
log=${2:-/dev/stderr}
die() { echo "rocm-build: $*" >&2; exit 1; }
# shellcheck source=test/vm/root-lib.sh
. "$top/test/vm/root-lib.sh"

root=$("$top/test/vm/rocm-root.sh" -q "$version") || die "test/vm/rocm-root.sh $version failed"
src=$top/build/vm/rocm-$version/src
mkdir -p "$src/test/emu"
tar -C "$top/test" -cf - --exclude='*.o' --exclude=bin --exclude=gen-include --exclude='*_client' \
	emu/clients e2e common | tar -C "$src/test" -xf -

bins=(emu/clients/rocr_client emu/clients/hip_client e2e/bin/rocr_workload e2e/bin/hip_workload e2e/bin/ipc_workload)
{
	root_run "$root" make -C "$src/test/emu/clients" -j2 rocr_client hip_client &&
		root_run "$root" make -C "$src/test/e2e" -j2 bin/rocr_workload bin/hip_workload bin/ipc_workload
} >"$log" 2>&1 || die "the build in the ROCm $version root failed"
# the versions rocm-root.sh makes a build root for
case "$version" in
6.4)
	build_root=$("$top/test/vm/rocm-root.sh" -q "$version" build) || die "test/vm/rocm-root.sh $version build failed"
	if ! root_run "$build_root" make -C "$src/test/e2e" bin/hip_kernel_workload >>"$log" 2>&1; then
		die "the build in the ROCm $version build root failed"
	fi
	# it runs in the root, which has no compiler: every library it needs must be the root's
	if root_run "$root" ldd "$src/test/e2e/bin/hip_kernel_workload" 2>&1 | tee -a "$log" | grep -q 'not found'; then
		die "hip_kernel_workload, built in the build root, does not load in the ROCm $version root"
	fi
	bins+=(e2e/bin/hip_kernel_workload)
	;;
esac
for bin in "${bins[@]}"; do
	[ -x "$src/test/$bin" ] || die "no $bin was built"
done
