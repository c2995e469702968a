# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# What the container scenarios share whatever the engine (Podman: test/e2e/podman-lib.sh;
# Docker: test/e2e/lib/docker.sh; containerd through the CRI: test/e2e/lib/containerd.sh).
# Sourced in the guest after test/vm/lib.sh and test/e2e/lib.sh.
#
#   containers_enter "$@"             re-execute the scenario in a mount namespace of its own (where
#                                     guest_overlays makes /usr, /var and /etc writable)
#   containers_require <engine>       skip (77) without <engine>, or in a guest under 4 GiB
#   containers_node <preset> <dir>    an operator's node for Docker or containerd: the emulator as
#                                     <preset>, a tmpfs at <dir> (larger than the guest's /tmp:
#                                     image copies and checkpoints pass through it) holding the
#                                     overlays, the guide's node-setup block (the package with
#                                     dpkg -i; criu's runc.conf, its log at $CONTAINERS_CRIU_LOG)
#   guide_job <image>                 IMAGE, DATA, state and JOB for the guide's commands: ROCm's
#                                     HIP job with kernels in flight ($KERNEL_ARGS) from <image>,
#                                     writing its state file in the results directory
#   containers_leftovers <dir>        logs and removes what containerd left in its TMPDIR <dir>
#                                     after a restore (the checkpoint it unpacked there)
#   tap_render_nodes_made <n> <minors>   criu's log says the plugin made <n> render nodes the
#                                     restored /dev lacked, their minors matching the regex
#                                     <minors> (the first such line shown)
#   containers_install_package        installs the package built for this guest's Debian with
#                                     dpkg -i, as an operator would: on Debian 13 the one make deb
#                                     built in the trixie root (test/vm/trixie-build.sh), on Debian
#                                     12 the host's (make deb); criu then finds the plugin in
#                                     /usr/lib/criu, with no --libdir
#   container_rootfs <dir>            a root filesystem of the workloads built for this guest and
#                                     every shared library they load (ldd's closure), busybox as
#                                     /bin/sh, the accounts of container_accounts
#   container_rocm_rootfs <version> <workload> <dir>
#                                     a root filesystem of one workload of a ROCm userland
#                                     (test/e2e/lib/userlands.sh): /wl/<workload>_workload and the
#                                     libraries it loads, from that userland's root; busybox, the
#                                     accounts of container_accounts
#   container_rocm_import <version> <workload> <import command...>
#                                     container_rocm_rootfs in a directory of its own, handed as a
#                                     tar on stdin to the engine's import command, then removed
#   container_accounts <dir>          /etc/passwd and /etc/group as an image has them: root, and the
#                                     video group with the node's gid (`--group-add video`, as
#                                     ROCm's documentation runs a container, looks it up there)
#   container_oci_archive <rootfs> <name:tag> <archive> [entrypoint...]
#                                     an OCI image layout of one uncompressed layer made of <rootfs>,
#                                     as a tar (what `ctr images import` and registries take), its
#                                     index naming the image <name:tag>
#   tap_guide <block> <what>          runs the command block <block> of Documentation/containers.md
#                                     (marked "<!-- guide: <block> -->") as written, with bash -e,
#                                     in $GUIDE_CWD (default: here), given IMAGE, JOB and DATA; one
#                                     TAP result. pod and ctr, the CRI blocks' shell variables, go
#                                     from one block to the next through the caller's
#   tap_refused_two_gpus <what> <criu log> <running check> <start command...>
#                                     a restore of a 2xMI210 job (GPUs 0x2b8c and 0xc1e6) the plugin
#                                     must refuse: the start command fails (its last line shown),
#                                     criu's log holds the plugin's refusal naming both GPUs, the
#                                     container is not running (<running check>, shell code, fails),
#                                     no workload process ($state) and no KFD process are left
#   render_nodes [n]                  the emulated GPUs' render nodes (the first n), space-separated
#   video_gid                         the video group's id (ROCm's containers are given it; 44,
#                                     Debian's, where /etc/group lacks it)
#   kfd_holders                       the /proc/<pid> of every process holding /dev/kfd
#   wait_kfd_released <what>          waits until no process holds /dev/kfd (so that the emulator
#                                     unloads), naming any that still does after 20 s

containers_enter() {
	if [ -z "${CONTAINERS_UNSHARED:-}" ]; then
		CONTAINERS_UNSHARED=1 exec unshare --mount --propagation private "$0" "$@"
	fi
}

containers_require() {
	local engine=$1 mem_kib
	command -v "$engine" >/dev/null || { echo "$engine is not installed"; exit 77; }
	mem_kib=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)
	if [ "${mem_kib:-0}" -lt $((3584 * 1024)) ]; then
		echo "the guest has $((mem_kib / 1024)) MiB; $engine needs 4 GiB here: make check-containers"
		exit 77
	fi
}

containers_node() {
	local preset=$1 dir=$2 nodes
	emu_reload preset="$preset" || { tap_not_ok "load the emulator as $preset"; e2e_done; }
	rm -rf "$dir"
	mkdir -p "$dir" && mount -t tmpfs -o size=85% tmpfs "$dir" && guest_overlays "$dir/overlay" ||
		{ tap_not_ok "a tmpfs at $dir, the overlays"; e2e_done; }
	GUIDE_CWD=$(dirname "$(containers_package)") tap_guide node-setup "the package installed, criu configured" ||
		e2e_done
	CRIU_LIBDIR=
	nodes=$(render_nodes)
	[ "$nodes" = "/dev/dri/renderD128 /dev/dri/renderD129" ] ||
		log "the guide's commands name renderD128 and renderD129; this node has $nodes"
}

guide_job() {
	IMAGE=$1 DATA=$RESULTS_DIR
	state=$RESULTS_DIR/job.state
	JOB="/wl/hip_kernel_workload --state $state ${KERNEL_ARGS[*]}"
}

containers_leftovers() {
	local left
	left=$(find "$1" -mindepth 1 -maxdepth 1 2>/dev/null)
	[ -z "$left" ] || log "containerd left what it restored from in its TMPDIR: $(du -sm $left | awk '{ s += $1 } END { print s }') MiB; removed"
	rm -rf $left
}

tap_render_nodes_made() {
	local made
	made=$(grep -c "had no render node in this mount namespace .*: made /dev/dri/renderD$2," "$CONTAINERS_CRIU_LOG")
	tap_check "the plugin made the $1 render nodes the restored /dev lacked ($made)" [ "$made" = "$1" ]
	grep -m1 'had no render node' "$CONTAINERS_CRIU_LOG" | sed 's/.*amdgpu_plugin: /#   /'
}

# The package this guest's Debian is given: its path
containers_package() {
	local version dir=$VM_REPO/build/deb
	version=$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' "$VM_REPO/debian/changelog")
	case "$(cat /etc/debian_version 2>/dev/null)" in
	13.* | trixie*) dir=$VM_REPO/build/vm/trixie/pkg/deb ;;
	esac
	echo "$dir/criu-amdgpu-plugin_${version}_amd64.deb"
}

containers_install_package() {
	local deb
	deb=$(containers_package)
	[ -e "$deb" ] || { log "no $deb: make deb (bookworm) or test/vm/trixie-build.sh (trixie) builds it"; return 1; }
	dpkg -i "$deb" >"$RESULTS_DIR/dpkg-i.out" 2>&1 || { tail -n 5 "$RESULTS_DIR/dpkg-i.out" | sed 's/^/#   /'; return 1; }
	[ -e /usr/lib/criu/amdgpu_plugin.so ] || { log "dpkg -i $deb put no /usr/lib/criu/amdgpu_plugin.so"; return 1; }
	CONTAINERS_PACKAGE=${deb#"$VM_REPO"/}
}

container_accounts() {
	mkdir -p "$1/etc" &&
		echo 'root:x:0:0:root:/root:/bin/sh' >"$1/etc/passwd" &&
		printf 'root:x:0:\nvideo:x:%s:\n' "$(video_gid)" >"$1/etc/group"
}

container_rootfs() {
	local root=$1 f lib
	rm -rf "$root"
	mkdir -p "$root/wl" "$root/bin" "$root/results" "$root/tmp"
	cp /bin/busybox "$root/bin/busybox" && ln -s busybox "$root/bin/sh" && container_accounts "$root" || return 1
	for f in "$E2E_BIN"/*_workload; do
		cp "$f" "$root/wl/"
		for lib in $(ldd "$f" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }'); do
			mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"
		done
	done
}

# Only what the process loads: a whole userland (500 MB without the compiler) would cost minutes
# of copying under emulation for every container made from it (vfs storage copies the image for
# each), and adds nothing the process uses: 30 MiB for the runtime's workload, 260 for HIP's
# (comgr holds LLVM, which HIP opens at run time).
container_rocm_rootfs() {
	local root=$USERLAND_DIR/rocm-$1/root stage=$3
	local -a todo=() done=()
	local f=$USERLAND_DIR/rocm-$1/src/test/e2e/bin/${2}_workload so path
	rm -rf "$stage"
	mkdir -p "$stage/wl" "$stage/bin" "$stage/tmp" "$stage/lib64"
	cp /bin/busybox "$stage/bin/busybox" && ln -s busybox "$stage/bin/sh" && container_accounts "$stage" || return 1
	cp "$f" "$stage/wl/" || return 1
	# shellcheck disable=SC2207 # sonames have no blanks
	todo=($(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'))
	[[ " ${todo[*]} " != *" libamdhip64.so."* ]] || todo+=(libamd_comgr.so.3)
	cp -L "$root/lib64/ld-linux-x86-64.so.2" "$stage/lib64/" || return 1
	while [ "${#todo[@]}" -gt 0 ]; do
		so=${todo[0]}
		todo=("${todo[@]:1}")
		[[ " ${done[*]} " != *" $so "* ]] || continue
		done+=("$so")
		path=/usr/lib/x86_64-linux-gnu/$so
		[ -e "$root$path" ] || { log "container_rocm_rootfs: $so is not in $root$path"; return 1; }
		mkdir -p "$stage${path%/*}" && cp -L "$root$path" "$stage$path" || return 1
		# shellcheck disable=SC2207 # sonames have no blanks
		todo+=($(readelf -d "$root$path" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'))
	done
	log "root filesystem of ROCm $1's $2 workload: ${#done[@]} libraries, $(du -sm "$stage" | cut -f1) MiB"
}

GUIDE=$VM_REPO/Documentation/containers.md
# where the guide's node-setup block has criu write its log
CONTAINERS_CRIU_LOG=/var/log/criu/runc.log

# guide_block <block>: the text of the guide's command block <block>
guide_block() {
	awk -v mark="<!-- guide: $1 -->" '
		$0 == mark { want = 1; next }
		want && $0 == "```sh" { on = 1; want = 0; next }
		on && $0 == "```" { exit }
		on { print }
	' "$GUIDE"
}

tap_guide() {
	local block=$1 what="$2 (Documentation/containers.md: $1)" text out=$RESULTS_DIR/guide-$1.out
	local vars=$RESULTS_DIR/guide-$1.vars
	text=$(guide_block "$block")
	[ -n "$text" ] || { tap_not_ok "$what" "the guide has no block $block"; return 1; }
	rm -f "$vars"
	if (cd "${GUIDE_CWD:-.}" && PATH=$E2E_BIN:$PATH IMAGE=${IMAGE:-} JOB=${JOB:-} DATA=${DATA:-} \
		pod=${pod:-} ctr=${ctr:-} \
		bash -ec "$text"$'\n''for v in pod ctr; do [ -z "${!v+x}" ] || printf "%s=%q\n" "$v" "${!v}"; done >"$1"' \
			guide "$vars") >"$out" 2>&1; then
		tap_ok "$what"
		# shellcheck disable=SC1090 # the block's own variables
		[ ! -s "$vars" ] || . "$vars"
		return 0
	fi
	tap_not_ok "$what" "$(tail -n 3 "$out" | tr '\n' ';')"
	return 1
}

tap_refused_two_gpus() {
	local what=$1 log=$2 running=$3 out=$RESULTS_DIR/refused.out refusal
	shift 3
	if "$@" >"$out" 2>&1; then
		tap_not_ok "$what fails" "it started"
	else
		tap_ok "$what fails: $(tail -n 1 "$out")"
	fi
	cp "$log" "$RESULTS_DIR/refused-criu.log" 2>/dev/null
	refusal=$(grep -E -m1 'amdgpu_plugin: .*(0x2b8c.*0xc1e6|0xc1e6.*0x2b8c)' "$log")
	if [ -n "$refusal" ]; then
		tap_ok "criu's log holds the plugin's refusal, naming the image's two GPUs: ${refusal#*amdgpu_plugin: }"
	else
		tap_not_ok "criu's log holds the plugin's refusal, naming the image's two GPUs"
		grep amdgpu_plugin "$log" | grep -v param: | tail -n 4 | sed 's/^/#   /'
	fi
	tap_check "the container is not running" eval "! { $running; }"
	tap_check "no workload process is left" eval '! pgrep -f -- "--state $state" >/dev/null'
	tap_no_kfd_process "no KFD process is left"
}

# oci_blob <layout> <file> <media type>: moves <file> into the layout's blobs; prints its
# descriptor ({"mediaType", "digest", "size"})
oci_blob() {
	local digest size
	digest=$(sha256sum "$2" | cut -d' ' -f1)
	size=$(stat -c %s "$2")
	mv "$2" "$1/blobs/sha256/$digest"
	printf '{"mediaType":"%s","digest":"sha256:%s","size":%s}' "$3" "$digest" "$size"
}

container_oci_archive() {
	local rootfs=$1 name=$2 archive=$3 layout=$3.d layer config manifest diff_id entrypoint=""
	shift 3
	[ $# -eq 0 ] || entrypoint=$(printf ',"%s"' "$@")
	rm -rf "$layout" && mkdir -p "$layout/blobs/sha256" || return 1
	tar -C "$rootfs" --numeric-owner -cf "$layout/layer.tar" . || return 1
	diff_id=sha256:$(sha256sum "$layout/layer.tar" | cut -d' ' -f1)
	layer=$(oci_blob "$layout" "$layout/layer.tar" application/vnd.oci.image.layer.v1.tar)
	printf '{"architecture":"amd64","os":"linux","config":{%s},"rootfs":{"type":"layers","diff_ids":["%s"]}}' \
		"${entrypoint:+\"Entrypoint\":[${entrypoint#,}]}" "$diff_id" >"$layout/config.json"
	config=$(oci_blob "$layout" "$layout/config.json" application/vnd.oci.image.config.v1+json)
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":%s,"layers":[%s]}' \
		"$config" "$layer" >"$layout/manifest.json"
	manifest=$(oci_blob "$layout" "$layout/manifest.json" application/vnd.oci.image.manifest.v1+json)
	printf '{"schemaVersion":2,"manifests":[%s]}' \
		"${manifest%\}},\"annotations\":{\"io.containerd.image.name\":\"$name\",\"org.opencontainers.image.ref.name\":\"${name##*:}\"}}" \
		>"$layout/index.json"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
	tar -C "$layout" -cf "$archive" oci-layout index.json blobs && rm -rf "$layout"
}

container_rocm_import() {
	local stage=/tmp/rocm-rootfs-$1-$2 rc
	container_rocm_rootfs "$1" "$2" "$stage" || { rm -rf "$stage"; return 1; }
	shift 2
	tar -C "$stage" -c . | "$@" >/dev/null
	rc=$?
	rm -rf "$stage"
	return $rc
}

render_nodes() {
	local n=${1:-99} out=() d
	for d in /sys/class/drm/renderD*; do
		case "$(readlink -f "$d/device")" in
		*/amdgpu_emu.*) out+=("/dev/dri/${d##*/}") ;;
		esac
	done
	echo "${out[@]:0:$n}"
}

video_gid() {
	awk -F: '$1 == "video" { print $3; found = 1 } END { if (!found) print 44 }' /etc/group
}

kfd_holders() {
	local fd
	for fd in /proc/[0-9]*/fd/*; do
		[ "$(readlink "$fd" 2>/dev/null)" = /dev/kfd ] && echo "${fd%/fd/*}"
	done | sort -u
}

wait_kfd_released() {
	if ! wait_for '[ -z "$(kfd_holders)" ]' 20; then
		log "$1: still holding /dev/kfd: $(for p in $(kfd_holders); do tr '\0' ' ' <"$p/cmdline"; echo ';'; done)"
		return 1
	fi
}
