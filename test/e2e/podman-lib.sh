# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# GPU containers in the guest, for the container scenarios (test/e2e/scenarios/8*-podman-*.sh),
# sourced after test/vm/lib.sh and test/e2e/lib.sh; what every engine shares is in
# test/e2e/lib/containers.sh. The flow is the README's "Checkpoint a GPU
# container with Podman", with what the test bed needs on top:
#   - the scenario runs in a mount namespace of its own (podman_enter re-executes it under unshare)
#     where /usr, /var and /etc are overlays on tmpfs: the host's root, which the guest sees over
#     9p, is never written;
#   - the plugin comes from the package built for the guest's Debian, installed with dpkg -i into
#     those overlays: criu, started by the container runtime, finds it in /usr/lib/criu with no
#     --libdir (containers_install_package);
#   - Podman keeps its storage on the guest's tmpfs (vfs driver, cgroupfs, file events), runs crun
#     where it has CRIU support (trixie) and runc otherwise (bookworm's crun has none), and the
#     image is made without a registry: `podman
#     import` of a directory holding the workloads and the shared libraries they load.
#
#   podman_enter "$@"                 re-execute the scenario in its own mount namespace
#   podman_require                    skip (77) without podman or runc, or in a guest under 4 GiB
#   podman_begin "$@"                 podman_enter, e2e_require, podman_require, the kernel log mark
#   podman_setup [image function]     the emulator as 2xmi210, overlays (guest_overlays of
#                                     test/e2e/lib.sh), the package, the image (podman_image, or
#                                     the function given, which imports $PODMAN_IMAGE)
#   podman_rocm_image <version> <w>   the image of a ROCm userland's workload <w>
#                                     (test/e2e/lib/userlands.sh): /wl/<w>_workload and the
#                                     libraries it loads, from that root
#   pm <podman args...>               podman with the test bed's storage and runtime options
#   gpu_run <name> <workload> <devices> [workload args...]
#                                     starts a detached container running <workload>_workload with
#                                     --state $RESULTS_DIR/<name>.state, given /dev/kfd and the render
#                                     nodes in <devices> (space-separated), and $GPU_RUN_OPTS
#                                     (more podman run options); sets pid and state
#   tap_podman <name> <podman args...>   one TAP result for a podman command (criu logs kept)
#   tap_export_import <prefix> <name> <new name>   checkpoint --export, the container removed,
#                                     restore --import as <new name>: TAP results named "<prefix>podman
#                                     container ..."; sets pid to the new container's workload
#   tap_import_refused <what> <archive> <new name> <refusal regex>
#                                     restore --import must fail; the criu log podman's error names
#                                     must hold the plugin's refusal (matching the regex); no
#                                     workload process ($state), no running container, no KFD
#                                     process may be left
#   podman_teardown                   removes every container and waits until no process holds
#                                     /dev/kfd (so that the emulator unloads), naming any that does
#   gpu_container_pid <name>          the host pid of the container's workload

# shellcheck source=test/e2e/lib/containers.sh
. "$VM_REPO/test/e2e/lib/containers.sh"

PODMAN_DIR=/tmp/podman
PODMAN_IMAGE=localhost/gpu-workloads:test
# The runtime that checkpoints through criu: crun where it is built with CRIU (trixie's 1.21 is,
# through libcriu), else runc (bookworm's crun 1.8.1 is not).
if [ -z "${PODMAN_RUNTIME:-}" ]; then
	PODMAN_RUNTIME=runc
	crun --version 2>/dev/null | grep -q '+CRIU' && PODMAN_RUNTIME=crun
fi

podman_enter() {
	containers_enter "$@"
}

pm() {
	podman --root "$PODMAN_DIR/root" --runroot "$PODMAN_DIR/run" --storage-driver vfs \
		--cgroup-manager cgroupfs --events-backend file --runtime "$PODMAN_RUNTIME" "$@"
}

# The image: the workloads, busybox as /bin/sh, and every shared library they and the ROCm
# libraries load, at their paths (container_rootfs)
podman_image() {
	container_rootfs "$PODMAN_DIR/image" && tar -C "$PODMAN_DIR/image" -c . | pm import - "$PODMAN_IMAGE" >/dev/null
}

# podman_rocm_image <version> <workload>: the image of one workload of a ROCm userland
# (container_rocm_rootfs)
podman_rocm_image() {
	container_rocm_import "$1" "$2" pm import - "$PODMAN_IMAGE"
}

# podman_begin "$@": a mount namespace of the scenario's own (the script runs again in it), then
# skip (77) unless the workloads, the plugin, Podman and a 4 GiB guest are there; the kernel log
# mark of e2e_done.
podman_begin() {
	podman_enter "$@"
	e2e_require
	podman_require
	scenario_warnings_begin
}

podman_require() {
	containers_require podman
	command -v "$PODMAN_RUNTIME" >/dev/null || { echo "$PODMAN_RUNTIME is not installed"; exit 77; }
}

# Podman's own configuration, the same as pm's options: a plain `podman` (the guide's commands,
# Documentation/containers.md) sees the same containers
podman_config() {
	mkdir -p /etc/containers &&
		printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' "$PODMAN_DIR/root" "$PODMAN_DIR/run" \
			>/etc/containers/storage.conf &&
		printf '[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\nruntime = "%s"\n' "$PODMAN_RUNTIME" \
			>/etc/containers/containers.conf
}

# podman_setup [image function]: the emulator loaded as 2xmi210, then the overlays, the package
# and the image
podman_setup() {
	local image=${1:-podman_image}
	emu_reload preset=2xmi210 || { tap_not_ok "load the emulator"; e2e_done; }
	rm -rf "$PODMAN_DIR"
	mkdir -p "$PODMAN_DIR"
	if guest_overlays "$PODMAN_DIR/overlay" && containers_install_package &&
		mkdir -p /etc/criu && echo link-remap >/etc/criu/runc.conf &&
		echo link-remap >/etc/criu/crun.conf && podman_config && $image; then
		tap_ok "podman $(podman --version | awk '{ print $3 }') with $PODMAN_RUNTIME, the plugin from $CONTAINERS_PACKAGE (dpkg -i), a local image"
	else
		tap_not_ok "podman with $PODMAN_RUNTIME, the plugin from the package, a local image"
		e2e_done
	fi
	CRIU_LIBDIR=
}

# tap_podman <name> <podman args...>: one TAP result for a podman command. On failure the criu
# logs runc left in the container's directory are copied to the results, their errors shown.
tap_podman() {
	local name=$1 out log
	shift
	out=$RESULTS_DIR/podman-$((TAP_N + 1)).out
	if pm "$@" >"$out" 2>&1; then
		tap_ok "$name"
		return 0
	fi
	tap_not_ok "$name" "$(grep -v '^time=' "$out" | tail -n 3 | tr '\n' ';')"
	for log in $(find "$PODMAN_DIR/root" -name '*.log' -path '*userdata*' 2>/dev/null); do
		cp "$log" "$RESULTS_DIR/podman-$TAP_N-$(basename "$log")"
		grep -E 'Error|amdgpu_plugin: .*(fail|cannot|error)' "$log" | tail -n 5 | sed 's/^/#   /'
	done
	return 1
}

tap_export_import() {
	local prefix=$1 name=$2 new=$3
	tap_podman "${prefix}podman container checkpoint --export" \
		container checkpoint --export "$PODMAN_DIR/$name.tar.gz" "$name" &&
		pm rm -f "$name" >/dev/null 2>&1 &&
		tap_podman "${prefix}podman container restore --import --name $new" \
			container restore --import "$PODMAN_DIR/$name.tar.gz" --name "$new"
	pid=$(gpu_container_pid "$new")
}

tap_import_refused() {
	local what=$1 archive=$2 name=$3 regex=$4 out=$RESULTS_DIR/refused-$3.out log refusal
	if pm container restore --import "$archive" --name "$name" >"$out" 2>&1; then
		tap_not_ok "podman container restore --import $what fails" "it succeeded"
	else
		tap_ok "podman container restore --import $what fails"
	fi
	# criu's log of the failed restore, which runc names in the error podman prints (podman 4.3
	# and runc 1.1 relay no more of criu's output than that)
	log=$(grep -o '/[^ "]*restore\.log' "$out" | head -n 1)
	[ -z "$log" ] || cp "$log" "$RESULTS_DIR/refused-$name-restore.log" 2>/dev/null
	refusal=$(grep -E "amdgpu_plugin: .*($regex)" "$RESULTS_DIR/refused-$name-restore.log" 2>/dev/null | head -n 1)
	if [ -n "$refusal" ]; then
		tap_ok "the log podman's error names has the plugin's refusal: ${refusal#*amdgpu_plugin: }"
	else
		tap_not_ok "the log podman's error names has the plugin's refusal ($regex)" \
			"$(grep -v '^time=' "$out" | tail -n 3 | tr '\n' ';')"
		grep 'amdgpu_plugin' "$RESULTS_DIR/refused-$name-restore.log" 2>/dev/null | grep -v param: | tail -n 4 |
			sed 's/^/#   /'
	fi
	tap_check "no workload process is left" eval '! pgrep -f -- "--state $state" >/dev/null'
	tap_check "the container $name is not running" \
		test "$(pm inspect -f '{{.State.Running}}' "$name" 2>/dev/null || echo absent)" != true
	tap_no_kfd_process "no KFD process is left"
}

podman_teardown() {
	pm rm -af -t 0 >/dev/null 2>&1
	wait_kfd_released "after podman rm"
}

gpu_container_pid() {
	pm inspect -f '{{.State.Pid}}' "$1" 2>/dev/null
}

gpu_run() {
	local name=$1 w=$2 devices=$3 dev args=()
	shift 3
	for dev in /dev/kfd $devices; do
		args+=(--device "$dev")
	done
	state=$RESULTS_DIR/$name.state
	rm -f "$state" "$state".*
	# the results directory at the same path inside: the state file's path is the same for both
	pm run -d --name "$name" --network "${PODMAN_NETWORK:-host}" "${args[@]}" ${GPU_RUN_OPTS:-} -v "$RESULTS_DIR:$RESULTS_DIR" \
		"$PODMAN_IMAGE" "/wl/${w}_workload" --state "$state" "$@" >"$RESULTS_DIR/$name.run.out" 2>&1 ||
		{ log "podman run $name: $(tail -n3 "$RESULTS_DIR/$name.run.out")"; return 1; }
	pid=$(gpu_container_pid "$name")
	if wait_for "[ -s '$state' ]" 120; then
		return 0
	fi
	log "$name: the workload did not get ready; its output:"
	pm logs "$name" 2>&1 | tail -n 20 | sed 's/^/#   /'
	return 1
}
