# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# GPU containers under Docker in the trixie guest (Debian sid's docker.io 28.5 with its containerd
# 2.1 and runc 1.3: test/vm/trixie-root.sh), for test/e2e/scenarios/84-docker-*.sh. Sourced after
# test/vm/lib.sh and test/e2e/lib.sh. The node is set up as an operator's would be, with what the
# test bed needs on top:
#   - the node set up as Documentation/containers.md says, its blocks run as written (tap_guide):
#     the package installed with dpkg -i, criu's /etc/criu/runc.conf (link-remap, and its log at
#     $CONTAINERS_CRIU_LOG: `docker start` prints only "criu failed: type RESTORE errno 0"),
#     Docker's experimental features on in /etc/docker/daemon.json (containers_node);
#   - dockerd started by hand (no systemd in the guest) at its default paths (/var/lib/docker,
#     /var/run/docker.sock: the guide's commands are an operator's); it starts its own containerd.
#     Its storage is vfs (the guest's /var is an overlay, where overlay2 cannot stack, on a tmpfs
#     of Docker's own), cgroupfs, no bridge and no iptables: the containers use the node's network;
#   - images made with `docker import` of a root filesystem (no registry is reachable).
#
#   docker_begin "$@"                 containers_enter, e2e_require, 4 GiB and Docker, the kernel
#                                     log mark of e2e_done
#   docker_setup <preset> <image function> [args]
#                                     containers_node, the guide's docker-daemon block, dockerd, the
#                                     image (the function imports $DOCKER_IMAGE)
#   docker_rocm_image <version> <workload>   imports a ROCm userland's workload (container_rocm_rootfs)
#   docker_gpu_run <name> <workload> <devices> [workload args...]
#                                     `docker run -d` of /wl/<workload>_workload as ROCm's
#                                     documentation runs a GPU container: --device /dev/kfd and each
#                                     render node in <devices>, the video group, seccomp unconfined;
#                                     the results directory at its own path; --state
#                                     $RESULTS_DIR/<name>.state; sets pid and state
#   docker_gpu_create <name> <workload> <devices> [workload args...]
#                                     the same container, created and not started (the one a
#                                     checkpoint is restored into)
#   docker_checkpoint_into <checkpoint dir> <name>   puts a checkpoint where `docker start
#                                     --checkpoint` of container <name> finds it (see below)
#   docker_restored                   after a restore: containers_leftovers of dockerd's containerd
#   tap_docker <name> <docker args...>   one TAP result for a docker command; on failure its output
#                                     and the plugin's errors from criu's log
#   docker_teardown                   removes every container, stops dockerd, waits until no
#                                     process holds /dev/kfd
#
# Docker 28 refuses `docker start --checkpoint-dir` ("custom checkpointdir is not supported"):
# a checkpoint made with `docker checkpoint create --checkpoint-dir DIR` is restored into another
# container by copying DIR/<name> into that container's checkpoints directory
# (<data-root>/containers/<id>/checkpoints/) and starting it with --checkpoint <name>.

# shellcheck source=test/e2e/lib/containers.sh
. "$VM_REPO/test/e2e/lib/containers.sh"

DOCKER_DIR=/tmp/docker
DOCKER_IMAGE=localhost/gpu-workloads:test

docker_begin() {
	containers_enter "$@"
	e2e_require
	containers_require docker
	command -v dockerd >/dev/null || { echo "dockerd is not installed"; exit 77; }
	scenario_warnings_begin
}

docker_rocm_image() {
	container_rocm_import "$1" "$2" docker import - "$DOCKER_IMAGE"
}

# containerd, which dockerd starts, unpacks a checkpoint it restores into $TMPDIR/ctrd-checkpoint*
# and leaves it there (containerd 2.1): TMPDIR is Docker's own tmpfs, where docker_restored
# finds and removes it.
docker_start_daemon() {
	mkdir -p "$DOCKER_DIR/tmp"
	TMPDIR=$DOCKER_DIR/tmp dockerd --pidfile "$DOCKER_DIR/dockerd.pid" --storage-driver vfs \
		--exec-opt native.cgroupdriver=cgroupfs --bridge none --iptables=false --ip6tables=false \
		>"$RESULTS_DIR/dockerd.log" 2>&1 &
	wait_for 'docker info >/dev/null 2>&1' 60 || { log "dockerd did not answer in 60 s: $(tail -n 3 "$RESULTS_DIR/dockerd.log")"; return 1; }
}

docker_setup() {
	local preset=$1 image=$2
	shift 2
	containers_node "$preset" "$DOCKER_DIR"
	tap_guide docker-daemon "Docker's experimental features on" || e2e_done
	if docker_start_daemon && $image "$@"; then
		tap_ok "docker $(docker version -f '{{.Server.Version}}') (containerd $(containerd --version | awk '{ print $3 }'), runc $(runc --version | awk 'NR == 1 { print $3 }')), an imported image"
	else
		tap_not_ok "docker, an imported image"
		e2e_done
	fi
}

# The options of a GPU container, in gpu_opts: what ROCm's documentation gives (the device nodes,
# the video group, seccomp unconfined), the node's network, the results directory at the same
# path inside (the state file's path is the same for both)
docker_gpu_opts() {
	local dev
	gpu_opts=()
	for dev in /dev/kfd $1; do
		gpu_opts+=(--device "$dev")
	done
	gpu_opts+=(--group-add video --security-opt seccomp=unconfined --network host
		-v "$RESULTS_DIR:$RESULTS_DIR")
}

docker_gpu_create() {
	local name=$1 w=$2 devices=$3 gpu_opts
	shift 3
	state=$RESULTS_DIR/$name.state
	docker_gpu_opts "$devices"
	docker create --name "$name" "${gpu_opts[@]}" "$DOCKER_IMAGE" "/wl/${w}_workload" --state "$state" "$@" \
		>"$RESULTS_DIR/$name.create.out" 2>&1 ||
		{ log "docker create $name ${gpu_opts[*]}: $(tail -n 3 "$RESULTS_DIR/$name.create.out")"; return 1; }
}

docker_gpu_run() {
	local name=$1
	docker_gpu_create "$@" || return 1
	rm -f "$state" "$state".*
	docker start "$name" >"$RESULTS_DIR/$name.start.out" 2>&1 ||
		{ log "docker start $name: $(tail -n 3 "$RESULTS_DIR/$name.start.out")"; return 1; }
	pid=$(docker_pid "$name")
	wait_for "[ -s '$state' ]" 120 && return 0
	log "$name: the workload did not get ready; its output:"
	docker logs "$name" 2>&1 | tail -n 20 | sed 's/^/#   /'
	return 1
}

docker_pid() {
	docker inspect -f '{{.State.Pid}}' "$1" 2>/dev/null
}

docker_checkpoint_into() {
	local dir=$1 name=$2 id
	id=$(docker inspect -f '{{.Id}}' "$name") || return 1
	mkdir -p "/var/lib/docker/containers/$id/checkpoints" &&
		cp -a "$dir" "/var/lib/docker/containers/$id/checkpoints/"
}

docker_restored() {
	containers_leftovers "$DOCKER_DIR/tmp"
}

# The plugin's errors in criu's last log, for a failed command's diagnostics
docker_plugin_errors() {
	grep -E 'amdgpu_plugin: .*(fail|cannot|refus|lacks|needs|no GPU)' "$CONTAINERS_CRIU_LOG" 2>/dev/null | grep -v param: | tail -n 4
}

tap_docker() {
	local name=$1 out
	shift
	out=$RESULTS_DIR/docker-$((TAP_N + 1)).out
	if docker "$@" >"$out" 2>&1; then
		tap_ok "$name"
		return 0
	fi
	tap_not_ok "$name" "$(tail -n 3 "$out" | tr '\n' ';')"
	cp "$CONTAINERS_CRIU_LOG" "$RESULTS_DIR/docker-$TAP_N-criu.log" 2>/dev/null
	docker_plugin_errors | sed 's/^/#   /'
	return 1
}

docker_teardown() {
	docker rm -f $(docker ps -aq) >/dev/null 2>&1
	wait_kfd_released "after docker rm"
	[ -s "$DOCKER_DIR/dockerd.pid" ] && kill "$(cat "$DOCKER_DIR/dockerd.pid")" 2>/dev/null
	wait_for "! kill -0 $(cat "$DOCKER_DIR/dockerd.pid" 2>/dev/null || echo 0) 2>/dev/null" 30 ||
		log "dockerd did not stop within 30 s"
}
