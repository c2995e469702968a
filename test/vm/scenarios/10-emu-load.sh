#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The emulator loads with each of its presets and presents what the amdgpu/KFD driver would:
# /dev/kfd, a CPU node plus one topology node per GPU with a unique gpu_id, a render node for
# each GPU; reloading with gpu_ids= changes the ids (and only them); unloading leaves nothing;
# and the kernel log stays free of warnings.
# timeout: 300
. test/vm/lib.sh

[ -e "$EMU_KO" ] || { echo "emulator not built ($EMU_KO)"; exit 77; }

# GPUs per preset (test/emu/emu_main.c); the MI300X presets' XCCs per node and nodes per GPU.
declare -A preset_gpus=([mi100]=1 [2xmi210]=2 [mi250x]=4 [2xmi300x]=2 [8xmi300x]=8 [cpx8]=8 [cpx8-nps4]=8)
declare -A preset_xccs=([2xmi300x]=8 [8xmi300x]=8 [cpx8]=1 [cpx8-nps4]=1)
declare -A preset_partitions=([2xmi300x]=1 [8xmi300x]=1 [cpx8]=8 [cpx8-nps4]=8)
presets="mi100 2xmi210 mi250x 2xmi300x 8xmi300x cpx8 cpx8-nps4"

dmesg_mark "10-emu-load: begin"

# Processes cost tens of milliseconds each under TCG: the checks read sysfs with shell builtins.
gpu_ids() {
	local n id ids=()
	for n in $(emu_gpu_nodes); do
		read -r id <"$KFD_TOPOLOGY/$n/gpu_id"
		ids+=("$id")
	done
	echo "${ids[*]}"
}

render_minors() {
	local n
	for n in $(emu_gpu_nodes); do
		emu_node_prop "$n" drm_render_minor
	done
}

# check_topology <preset> <expected GPUs>: one result per property of the loaded emulator.
check_topology() {
	local p=$1 want=$2 major="" name mode maj min n id minor dev bad="" ids nodes gpus
	while read -r n name; do
		[ "$name" = kfd ] && major=$n
	done </proc/devices
	read -r mode maj min < <(stat -c '%a %t %T' /dev/kfd 2>/dev/null)
	if [ -c /dev/kfd ] && [ -n "$major" ] && [ "$((16#${maj:-0}))" = "$major" ]; then
		tap_ok "$p: /dev/kfd is the kfd character device ($major:$((16#$min)))"
	else
		tap_not_ok "$p: /dev/kfd is the kfd character device" "major '$maj' (hex), kfd is '$major'"
	fi
	if [ "$mode" = 666 ]; then
		tap_ok "$p: /dev/kfd is open to all (0666, like amdgpu)"
	else
		tap_not_ok "$p: /dev/kfd is open to all (0666, like amdgpu)" "mode $mode"
	fi

	nodes=("$KFD_TOPOLOGY"/*)
	gpus=$(emu_gpu_nodes | wc -l)
	if [ "${#nodes[@]}" -eq $((want + 1)) ] && [ "$gpus" -eq "$want" ]; then
		tap_ok "$p: ${#nodes[@]} topology nodes, $gpus of them GPUs"
	else
		tap_not_ok "$p: $((want + 1)) topology nodes, $want of them GPUs" \
			"found ${#nodes[@]} nodes, $gpus GPUs"
	fi
	read -r id <"$KFD_TOPOLOGY/0/gpu_id"
	if [ "$id" = 0 ]; then
		tap_ok "$p: node 0 is the CPU (gpu_id 0)"
	else
		tap_not_ok "$p: node 0 is the CPU (gpu_id 0)" "its gpu_id is $id"
	fi

	ids=$(gpu_ids)
	local -A seen=()
	for id in $ids; do
		[ "$id" -gt 0 ] && [ "$id" -lt 65536 ] || bad+=" $id(range)"
		[ -z "${seen[$id]:-}" ] || bad+=" $id(twice)"
		seen[$id]=1
	done
	if [ -z "$bad" ]; then
		tap_ok "$p: gpu_ids are unique and in 1..0xffff ($ids)"
	else
		tap_not_ok "$p: gpu_ids are unique and in 1..0xffff" "bad:$bad"
	fi

	# Each GPU's render node: in sysfs as DRM's 226:<minor>, and as that device in /dev/dri.
	local -A node_dev=() minors_seen=()
	while read -r name maj min; do
		node_dev[$name]=$((16#$maj)):$((16#$min))
	done < <(stat -c '%n %t %T' /dev/dri/renderD* 2>/dev/null)
	bad=""
	for minor in $(render_minors); do
		dev=""
		[ -r "/sys/class/drm/renderD$minor/dev" ] && read -r dev <"/sys/class/drm/renderD$minor/dev"
		if [ "$dev" != "226:$minor" ] || [ "${node_dev[/dev/dri/renderD$minor]:-}" != "226:$minor" ]; then
			bad+=" renderD$minor(sysfs '$dev', node '${node_dev[/dev/dri/renderD$minor]:-none}')"
		fi
		[ -z "${minors_seen[$minor]:-}" ] || bad+=" renderD$minor(twice)"
		minors_seen[$minor]=1
	done
	if [ -z "$bad" ] && [ "${#minors_seen[@]}" -eq "$want" ]; then
		tap_ok "$p: each GPU node has its own render node /dev/dri/renderD<drm_render_minor>"
	else
		tap_not_ok "$p: each GPU node has its own render node /dev/dri/renderD<drm_render_minor>" \
			"${#minors_seen[@]} distinct minors;$bad"
	fi
}

# check_partitions <preset>: an MI300X preset's nodes as KFD shows them in its partition mode: the
# XCCs of each (num_xcc, printed by 6.5 and newer), its GPU's partitions sharing one unique_id,
# and between them xGMI links of weight 13
check_partitions() {
	local p=$1 xccs=${preset_xccs[$1]} parts=${preset_partitions[$1]} n bad="" uid
	local -A per_uid=()
	for n in $(emu_gpu_nodes); do
		if grep -q '^num_xcc ' "$KFD_TOPOLOGY/$n/properties"; then
			[ "$(emu_node_prop "$n" num_xcc)" = "$xccs" ] || bad+=" node $n num_xcc $(emu_node_prop "$n" num_xcc)"
		elif [ "${VM_GUEST:-bookworm}" = trixie ]; then
			bad+=" node $n has no num_xcc"
		fi
		uid=$(emu_node_prop "$n" unique_id)
		per_uid[$uid]=$((${per_uid[$uid]:-0} + 1))
	done
	for uid in "${!per_uid[@]}"; do
		[ "${per_uid[$uid]}" = "$parts" ] || bad+=" unique_id $uid on ${per_uid[$uid]} nodes"
	done
	if [ "$parts" -gt 1 ] && ! grep -qx 'weight 13' "$KFD_TOPOLOGY"/1/io_links/*/properties; then
		bad+=" no weight-13 link between partitions"
	fi
	if [ -z "$bad" ]; then
		tap_ok "$p: each node runs $xccs XCC(s), each GPU is $parts node(s) sharing its unique_id"
	else
		tap_not_ok "$p: each node runs $xccs XCC(s), each GPU is $parts node(s) sharing its unique_id" "$bad"
	fi
}

for p in $presets; do
	want=${preset_gpus[$p]}
	if ! emu_reload preset="$p"; then
		tap_not_ok "$p: load" "emu_load preset=$p failed"
		continue
	fi
	tap_ok "$p: load"
	check_topology "$p" "$want"
	[ -z "${preset_xccs[$p]:-}" ] || check_partitions "$p"
	default_ids=$(gpu_ids)
	minors_before=$(render_minors)

	# The same preset twice gives the same ids: a restore on the same node must find its GPUs.
	if emu_reload preset="$p" && [ "$(gpu_ids)" = "$default_ids" ]; then
		tap_ok "$p: reloading gives the same gpu_ids"
	else
		tap_not_ok "$p: reloading gives the same gpu_ids" "now '$(gpu_ids)', was '$default_ids'"
	fi

	# Other ids, disjoint from the defaults, in node order.
	new_ids=() id=$((0xa001))
	while [ "${#new_ids[@]}" -lt "$want" ]; do
		case " $default_ids " in *" $id "*) ;; *) new_ids+=("$id") ;; esac
		id=$((id + 0x0101))
	done
	list=$(IFS=,; echo "${new_ids[*]}")
	if emu_reload preset="$p" gpu_ids="$list"; then
		if [ "$(gpu_ids)" = "${new_ids[*]}" ]; then
			tap_ok "$p: gpu_ids=$list shows the new ids"
		else
			tap_not_ok "$p: gpu_ids=$list shows the new ids" "topology has '$(gpu_ids)'"
		fi
		check_topology "$p (gpu_ids=$list)" "$want"
	else
		tap_not_ok "$p: load with gpu_ids=$list"
	fi

	if emu_unload; then
		tap_ok "$p: unload"
	else
		tap_not_ok "$p: unload"
	fi
	left=""
	[ ! -e /dev/kfd ] || left+=" /dev/kfd"
	[ ! -e /sys/class/kfd ] || left+=" /sys/class/kfd"
	[ ! -d "/sys/module/$EMU_MODULE" ] || left+=" module"
	for minor in $minors_before; do
		[ ! -e "/dev/dri/renderD$minor" ] || left+=" /dev/dri/renderD$minor"
	done
	if [ -z "$left" ]; then
		tap_ok "$p: nothing is left after unloading"
	else
		tap_not_ok "$p: nothing is left after unloading" "left:$left"
	fi
done

# A preset the emulator does not have must be refused, not half-loaded.
if emu_load preset=no-such-gpu 2>/dev/null; then
	tap_not_ok "an unknown preset is refused"
	emu_unload
else
	[ ! -e /dev/kfd ] && tap_ok "an unknown preset is refused" ||
		tap_not_ok "an unknown preset is refused" "/dev/kfd exists"
fi

tap_dmesg_clean "10-emu-load: begin"
tap_done
