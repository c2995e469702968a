# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# A Kubernetes node's container runtime in the trixie guest, driven as kubelet drives it: Debian
# sid's containerd 2.1 with its CRI plugin and runc 1.3 (test/vm/trixie-root.sh), called through
# the CRI by the project's client (test/e2e/cri/cri_client.cpp), for
# test/e2e/scenarios/85-containerd-cri.sh. Sourced after test/vm/lib.sh and test/e2e/lib.sh. What
# the node has:
#   - the node set up by the guide's node-setup block (containers_node): the package installed
#     with dpkg -i, criu's log kept at $CONTAINERS_CRIU_LOG through /etc/criu/runc.conf
#     (containerd removes a failed restore's work directory, criu's log with it);
#   - a registry, Debian's docker-registry on 127.0.0.1:5000, holding the pod's images as a
#     cluster's registry does (no public one is reachable): containerd restores a checkpoint
#     archive only after pulling its base image from the registry that image came from. The
#     images are OCI layouts made here (container_oci_archive), imported into a namespace of
#     containerd's own and pushed;
#   - containerd started by hand (no systemd) with a configuration of its own ($CTR_DIR), on its
#     default socket (the guide's commands, Documentation/containers.md, are an operator's): the CRI
#     plugin on the native snapshotter (the guest's /var is an overlay, where overlayfs cannot
#     stack), runc through the io.containerd.runc.v2 shim with cgroupfs, the sandbox image from
#     that registry, no CDI, no AppArmor; criu from the PATH containerd is given (the suite's);
#   - pods on the node's network (no CNI), the pod's log directory made as kubelet makes it.
#
#   containerd_begin "$@"             containers_enter, e2e_require, 4 GiB and containerd, the
#                                     kernel log mark of e2e_done
#   containerd_setup <preset> <image function> [args]
#                                     containers_node, containerd, the registry with the sandbox
#                                     image, then the function
#   containerd_rocm_image <version> <workload>   pushes a ROCm userland's workload as $CTR_IMAGE
#   cri <cri_client args...>          the CRI client on this node's containerd
#   ctr_pod <name>                    a pod (RunPodSandbox); sets pod, adds it to CTR_PODS
#   ctr_gpu_create <pod> <name> <image> <devices> [workload args...]
#                                     CreateContainer of /wl/hip_kernel_workload (or $CTR_WORKLOAD)
#                                     given /dev/kfd and the render nodes in <devices> as the AMD
#                                     GPU device plugin gives them, the results directory mounted
#                                     at its own path; <image> is an image or a checkpoint archive;
#                                     sets ctr (its id)
#   ctr_pid <id>                      the container's pid on the node (0 unless running)
#   ctr_restored                      after a restore: containers_leftovers of containerd
#   containerd_teardown               removes the pods of CTR_PODS (their containers with them),
#                                     stops containerd and the registry, waits until no process
#                                     holds /dev/kfd

# shellcheck source=test/e2e/lib/containers.sh
. "$VM_REPO/test/e2e/lib/containers.sh"

CTR_DIR=/tmp/containerd
CTR_SOCK=/run/containerd/containerd.sock # its default: the guide's commands name none
CTR_REGISTRY=localhost:5000
CTR_IMAGE=$CTR_REGISTRY/rocm-workload:test
CRI_CLIENT=$E2E_BIN/cri_client

cri() {
	"$CRI_CLIENT" -s "$CTR_SOCK" "$@"
}

ctr_cli() {
	ctr -a "$CTR_SOCK" "$@"
}

containerd_begin() {
	containers_enter "$@"
	e2e_require
	containers_require containerd
	[ -x "$CRI_CLIENT" ] || { echo "no CRI client built ($CRI_CLIENT: the trixie root builds it)"; exit 77; }
	command -v docker-registry >/dev/null || { echo "no docker-registry"; exit 77; }
	scenario_warnings_begin
}

containerd_config() {
	cat <<TOML
version = 3
root = "$CTR_DIR/root"
state = "$CTR_DIR/state"

[grpc]
  address = "$CTR_SOCK"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'native'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '$CTR_REGISTRY/pause:test'

[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = false
  disable_apparmor = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false

[plugins.'io.containerd.transfer.v1.local']
  unpack_config = [{ platform = 'linux/amd64', snapshotter = 'native' }]
TOML
}

containerd_start() {
	mkdir -p "$CTR_DIR/tmp" "$CTR_DIR/registry"
	containerd_config >"$CTR_DIR/config.toml"
	printf 'version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:5000\n' \
		"$CTR_DIR/registry" >"$CTR_DIR/registry.yml"
	docker-registry serve "$CTR_DIR/registry.yml" >"$RESULTS_DIR/registry.log" 2>&1 &
	echo $! >"$CTR_DIR/registry.pid"
	# containerd unpacks a checkpoint archive it restores into $TMPDIR and leaves it there
	TMPDIR=$CTR_DIR/tmp containerd --config "$CTR_DIR/config.toml" >"$RESULTS_DIR/containerd.log" 2>&1 &
	echo $! >"$CTR_DIR/containerd.pid"
	wait_for 'cri version >/dev/null 2>&1' 60 ||
		{ log "containerd did not answer the CRI in 60 s: $(tail -n 3 "$RESULTS_DIR/containerd.log")"; return 1; }
	wait_for 'busybox wget -q -O /dev/null http://127.0.0.1:5000/v2/' 30 ||
		{ log "the registry did not answer in 30 s: $(tail -n 3 "$RESULTS_DIR/registry.log")"; return 1; }
}

# containerd_push <rootfs> <name:tag> [entrypoint...]: the image into the registry
containerd_push() {
	local rootfs=$1 name=$2 archive=$CTR_DIR/image.tar
	shift 2
	container_oci_archive "$rootfs" "$name" "$archive" "$@" &&
		ctr_cli -n push images import --no-unpack "$archive" >"$RESULTS_DIR/ctr-import.out" 2>&1 &&
		ctr_cli -n push images push --plain-http "$name" >"$RESULTS_DIR/ctr-push.out" 2>&1 ||
		{ log "pushing $name: $(tail -n 2 "$RESULTS_DIR"/ctr-*.out | tr '\n' ' ')"; rm -f "$archive"; return 1; }
	ctr_cli -n push images rm "$name" >/dev/null 2>&1
	rm -f "$archive"
}

# The sandbox ("pause") image: busybox sleeping, which is all a pod's sandbox process does
containerd_pause_image() {
	local root=$CTR_DIR/pause-root
	rm -rf "$root" && mkdir -p "$root/bin" && cp /bin/busybox "$root/bin/busybox" || return 1
	containerd_push "$root" "$CTR_REGISTRY/pause:test" /bin/busybox sleep 2147483647
	rm -rf "$root"
}

containerd_rocm_image() {
	local stage=$CTR_DIR/image-rocm-$1
	container_rocm_rootfs "$1" "$2" "$stage" && containerd_push "$stage" "$CTR_IMAGE"
	rm -rf "$stage"
}

containerd_setup() {
	local preset=$1 image=$2
	shift 2
	containers_node "$preset" "$CTR_DIR"
	if containerd_start && containerd_pause_image && $image "$@"; then
		tap_ok "$(cri version) with runc $(runc --version | awk 'NR == 1 { print $3 }'), images from a registry"
	else
		tap_not_ok "containerd's CRI, images from a registry"
		e2e_done
	fi
}

ctr_pod() {
	pod=$(cri pod-run "$1" 2>"$RESULTS_DIR/pod-$1.err") ||
		{ log "RunPodSandbox $1: $(cat "$RESULTS_DIR/pod-$1.err")"; return 1; }
	CTR_PODS+=" $pod"
}

ctr_gpu_create() {
	local pod=$1 name=$2 image=$3 devices=$4 dev args=()
	shift 4
	for dev in /dev/kfd $devices; do
		args+=(--device "$dev")
	done
	state=$RESULTS_DIR/$name.state
	ctr=$(cri create "$pod" "$name" "$image" "${args[@]}" --mount "$RESULTS_DIR" \
		-- "/wl/${CTR_WORKLOAD:-hip_kernel}_workload" --state "$state" "$@" 2>"$RESULTS_DIR/create-$name.err") ||
		{ log "$(cat "$RESULTS_DIR/create-$name.err")"; return 1; }
}

ctr_pid() {
	cri status "$1" 2>/dev/null | awk '{ print $2 }'
}

ctr_restored() {
	containers_leftovers "$CTR_DIR/tmp"
}

containerd_teardown() {
	local p
	for p in ${CTR_PODS:-}; do
		cri pod-remove "$p" >/dev/null 2>&1
	done
	wait_kfd_released "after removing the containers"
	for p in containerd registry; do
		[ -s "$CTR_DIR/$p.pid" ] && kill "$(cat "$CTR_DIR/$p.pid")" 2>/dev/null
	done
	wait_for "! kill -0 $(cat "$CTR_DIR/containerd.pid" 2>/dev/null || echo 0) 2>/dev/null" 30 ||
		log "containerd did not stop within 30 s"
}
