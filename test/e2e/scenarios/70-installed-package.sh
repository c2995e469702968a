#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The Debian package, installed the way a user installs it: `dpkg -i` of the .deb that `make deb`
# built (build/deb/), into the guest's own view of /usr, /var and /etc (overlays on tmpfs in a
# mount namespace of this scenario: the host's root, which the guest sees over 9p, is not
# touched). Then criu without --libdir: it finds /usr/lib/criu/amdgpu_plugin.so by itself, dumps
# the libhsakmt workload and restores it, every byte verified. (dpkg reads its database over 9p:
# the install takes a minute or more here.)
# timeout: 400
if [ -z "${E2E_70_UNSHARED:-}" ]; then
	E2E_70_UNSHARED=1 exec unshare --mount --propagation private "$0" "$@"
fi
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

version=$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' "$VM_REPO/debian/changelog")
deb=$VM_REPO/build/deb/criu-amdgpu-plugin_${version}_amd64.deb
if [ ! -e "$deb" ]; then
	tap_not_ok "the package is built" "no $deb: run make deb (make check does)"
	e2e_done
fi

repo_devs=$(stat -c %d "$VM_REPO" "$RESULTS_DIR")
if guest_overlays /tmp/pkg-overlay; then
	tap_ok "the guest's own /usr, /var and /etc (overlays on tmpfs)"
else
	tap_not_ok "the guest's own /usr, /var and /etc (overlays on tmpfs)"
	e2e_done
fi
tap_check "the checkout ($VM_REPO) and the results are still the host's, not the overlay's" \
	test "$(stat -c %d "$VM_REPO" "$RESULTS_DIR")" = "$repo_devs"

tap_check "no plugin in criu's default directory before the install" test ! -e /usr/lib/criu/amdgpu_plugin.so
# man-db's trigger would re-index every manual page over 9p for minutes; container images skip it too
echo 'man-db man-db/auto-update boolean false' | debconf-set-selections
t0=$(date +%s)
if dpkg -i "$deb" >"$RESULTS_DIR/dpkg-install.out" 2>&1; then
	log "dpkg -i took $(($(date +%s) - t0)) s"
	tap_ok "dpkg -i $(basename "$deb")"
else
	tap_not_ok "dpkg -i $(basename "$deb")" "$(tail -n3 "$RESULTS_DIR/dpkg-install.out" | tr '\n' ';')"
	e2e_done
fi
tap_check "dpkg lists criu-amdgpu-plugin $version as installed" \
	test "$(dpkg-query -W -f '${Status} ${Version}' criu-amdgpu-plugin)" = "install ok installed $version"

CRIU_LIBDIR=
wl_fresh hsakmt preset=2xmi210 -- --vram-mb 8 || e2e_done
gpus=$(/usr/bin/amdgpu-topology 2>&1 | grep -c ' GPU  gpu_id ')
tap_check "the installed amdgpu-topology lists the node's 2 GPUs ($gpus)" test "$gpus" = 2
tap_dump "criu dump without --libdir" "$pid" /tmp/img-70
tap_log_has "criu loaded the installed plugin for the dump" "$CRIU_LAST_LOG" 'Plugin "amdgpu_plugin"'
tap_log_has "the installed plugin checkpointed the GPU state" "$CRIU_LAST_LOG" 'amdgpu_plugin: pid [0-9]+: saved amdgpu-kfd-'
wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
tap_restore "criu restore without --libdir" /tmp/img-70
tap_log_has "the installed plugin restored the GPU state" "$CRIU_LAST_LOG" 'amdgpu_plugin: pid [0-9]+: GPU queues resumed'
tap_alive_verified "restored by the installed plugin" "$pid" "$state"
wl_kill "$pid"

e2e_done
