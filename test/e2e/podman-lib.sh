# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# GPU containers in the guest, for the container scenarios (test/e2e/scenarios/8*-podman-*.sh),
# sourced after test/vm/lib.sh and test/e2e/lib.sh. The flow is the README's "Checkpoint a GPU
# container with Podman", with what the test bed needs on top:
#   - the scenario runs in a mount namespace of its own (podman_enter re-executes it under unshare)
#     where /usr, /var and /etc are overlays on tmpfs: the host's root, which the guest sees over
#     9p, is never written;
#   - the plugin comes from the package `make deb` built, unpacked into that /usr: criu, started by
#     the container runtime, finds it in /usr/lib/criu with no --libdir (scenario 70 shows dpkg -i);
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
#   render_nodes [n]                  the emulated GPUs' render nodes (the first n), space-separated

PODMAN_DIR=/tmp/podman
PODMAN_IMAGE=localhost/gpu-workloads:test
# The runtime that checkpoints through criu: crun where it is built with CRIU (trixie's 1.21 is,
# through libcriu), else runc (bookworm's crun 1.8.1 is not).
if [ -z "${PODMAN_RUNTIME:-}" ]; then
	PODMAN_RUNTIME=runc
	crun --version 2>/dev/null | grep -q '+CRIU' && PODMAN_RUNTIME=crun
fi

podman_enter() {
	if [ -z "${PODMAN_UNSHARED:-}" ]; then
		PODMAN_UNSHARED=1 exec unshare --mount --propagation private "$0" "$@"
	fi
}

pm() {
	podman --root "$PODMAN_DIR/root" --runroot "$PODMAN_DIR/run" --storage-driver vfs \
		--cgroup-manager cgroupfs --events-backend file --runtime "$PODMAN_RUNTIME" "$@"
}

# The image: the workloads, busybox as /bin/sh, and every shared library they and the ROCm
# libraries load (ldd's closure), at their paths.
podman_image() {
	local root=$PODMAN_DIR/image f lib
	rm -rf "$root"
	mkdir -p "$root/wl" "$root/bin" "$root/results" "$root/tmp"
	cp /bin/busybox "$root/bin/busybox" && ln -s busybox "$root/bin/sh"
	for f in "$E2E_BIN"/*_workload; do
		cp "$f" "$root/wl/"
		for lib in $(ldd "$f" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }'); do
			mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"
		done
	done
	tar -C "$root" -c . | pm import - "$PODMAN_IMAGE" >/dev/null
}

# podman_rocm_image <version> <workload>: the image of one workload of a ROCm userland: the
# workload in /wl and every library it loads, as that root holds them (the closure of its ELF
# dependencies, plus comgr, which HIP opens at run time), at their paths. A whole userland (500 MB
# without the compiler) would cost minutes of copying under emulation for every container made
# from it (the vfs driver copies the image for each), and adds nothing the process uses: 30 MiB
# for the runtime's workload, 260 for HIP's (comgr holds LLVM).
podman_rocm_image() {
	local root=$USERLAND_DIR/rocm-$1/root stage=$PODMAN_DIR/image-rocm-$1
	local -a todo=() done=()
	local f=$USERLAND_DIR/rocm-$1/src/test/e2e/bin/${2}_workload so path
	rm -rf "$stage"
	mkdir -p "$stage/wl" "$stage/bin" "$stage/tmp" "$stage/lib64"
	cp /bin/busybox "$stage/bin/busybox" && ln -s busybox "$stage/bin/sh" || return 1
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
		[ -e "$root$path" ] || { log "podman_rocm_image: $so is not in $root$path"; return 1; }
		mkdir -p "$stage${path%/*}" && cp -L "$root$path" "$stage$path" || return 1
		# shellcheck disable=SC2207 # sonames have no blanks
		todo+=($(readelf -d "$root$path" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'))
	done
	log "image of ROCm $1's $2 workload: ${#done[@]} libraries, $(du -sm "$stage" | cut -f1) MiB"
	tar -C "$stage" -c . | pm import - "$PODMAN_IMAGE" >/dev/null
	rm -rf "$stage"
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
	local mem_kib
	command -v podman >/dev/null || { echo "podman is not installed"; exit 77; }
	command -v "$PODMAN_RUNTIME" >/dev/null || { echo "$PODMAN_RUNTIME is not installed"; exit 77; }
	mem_kib=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)
	if [ "${mem_kib:-0}" -lt $((3584 * 1024)) ]; then
		echo "the guest has $((mem_kib / 1024)) MiB; Podman needs 4 GiB here: make check-containers"
		exit 77
	fi
}

# podman_setup [image function]: the emulator loaded as 2xmi210, then the overlays, the package
# and the image
podman_setup() {
	local version deb image=${1:-podman_image}
	emu_reload preset=2xmi210 || { tap_not_ok "load the emulator"; e2e_done; }
	version=$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' "$VM_REPO/debian/changelog")
	deb=$VM_REPO/build/deb/criu-amdgpu-plugin_${version}_amd64.deb
	[ -e "$deb" ] || { tap_not_ok "the package is built" "no $deb: run make deb (make check does)"; e2e_done; }
	rm -rf "$PODMAN_DIR"
	mkdir -p "$PODMAN_DIR"
	if guest_overlays "$PODMAN_DIR/overlay" &&
		dpkg-deb -x "$deb" / && mkdir -p /etc/criu && echo link-remap >/etc/criu/runc.conf &&
		echo link-remap >/etc/criu/crun.conf &&
		$image; then
		tap_ok "podman $(podman --version | awk '{ print $3 }') with $PODMAN_RUNTIME, the plugin from $(basename "$deb"), a local image"
	else
		tap_not_ok "podman with $PODMAN_RUNTIME, the plugin from the package, a local image"
		e2e_done
	fi
	CRIU_LIBDIR=
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

kfd_holders() {
	local fd
	for fd in /proc/[0-9]*/fd/*; do
		[ "$(readlink "$fd" 2>/dev/null)" = /dev/kfd ] && echo "${fd%/fd/*}"
	done | sort -u
}

podman_teardown() {
	pm rm -af -t 0 >/dev/null 2>&1
	if ! wait_for '[ -z "$(kfd_holders)" ]' 20; then
		log "still holding /dev/kfd after podman rm: $(for p in $(kfd_holders); do tr '\0' ' ' <"$p/cmdline"; echo ';'; done)"
	fi
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
