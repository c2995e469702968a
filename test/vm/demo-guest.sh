#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The guest half of test/vm/demo.sh. Each step says what it runs; any failure ends the demo with
# a non-zero status.
. test/vm/lib.sh
set -e

step() { printf '\n== %s\n' "$*"; }

step "Loading the emulator: preset 2xmi210 (two emulated MI210 GPUs, no real hardware)"
emu_load preset=2xmi210
echo "/dev/kfd and $(emu_gpu_nodes | wc -l) GPU nodes present:"
for n in $(emu_gpu_nodes); do
	read -r id <"$KFD_TOPOLOGY/$n/gpu_id"
	echo "  node $n: gpu_id 0x$(printf %04x "$id"), /dev/dri/renderD$(emu_node_prop "$n" drm_render_minor)"
done

step "The topology as the plugin sees it (build/bin/amdgpu-topology)"
if [ -x build/bin/amdgpu-topology ]; then
	build/bin/amdgpu-topology
else
	echo "build/bin/amdgpu-topology is not built (make tools); skipped"
fi

step "criu and the plugin"
criu --version | head -n1
if dir=$(plugin_dir); then
	echo "plugin: $dir/amdgpu_plugin.so (criu --libdir $dir)"
else
	echo "plugin: not built (make plugin)"
fi

step "Not in this demo yet"
echo "Checkpoint and restore of a GPU workload on this node: the scenarios for it live in"
echo "test/e2e; this demo will run one once the plugin's dump and restore land."

emu_unload
