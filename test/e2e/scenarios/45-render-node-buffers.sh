#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A process that uses the render node alone (render_workload: libdrm_amdgpu, five GEM buffers of
# 12 MiB in VRAM and GTT, a gap in its handles, SDMA copies always in flight, no /dev/kfd). The
# memory of GEM buffers is the task's like that of KFD buffers, and this plugin does not save it
# yet: the dump must fail, naming the render-node file (pid and fd), the number of buffers, their
# bytes and handles, and the task runs on as it was. The same on Linux 6.1, where the kernel cannot
# list a file's GEM objects and the plugin finds them by their handles, and on 7.3, which lists them
# (GEM_LIST_HANDLES, Linux 6.18).
# timeout: 120
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

img=/tmp/img-45
emu_reload_or_say "load the emulator" preset=2xmi210 || e2e_done
wl_start render render || { tap_not_ok "render: the workload gets ready"; e2e_done; }
pid=$WL_PID state=$WL_STATE
tap_alive_verified "render: before the dump" "$pid" "$state"
task_snapshot "$pid" "$RESULTS_DIR/render.dumped"

if wl_dump "$pid" "$img"; then
	tap_not_ok "render: the dump of a task holding GEM buffers fails" "it succeeded: their memory is in no image"
else
	tap_ok "render: the dump of a task holding GEM buffers fails"
fi
# five content buffers (12 MiB) and the SDMA command buffer (4 KiB); handle 3 was freed
minor=$(sed -n 's/^gpu .* render \([0-9]*\)$/\1/p' "$state")
fd=$(for f in /proc/"$pid"/fd/*; do [ "$(readlink "$f")" = "/dev/dri/renderD$minor" ] && echo "${f##*/}"; done | head -n 1)
# Linux 6.18 lists them; before, the plugin finds them by their handles and says so
if uname -r | awk -F. '{ exit !($1 > 6 || ($1 == 6 && $2 >= 18)) }'; then
	how=listed tail='\)'
else
	how=probed tail='; found by their handles, as this kernel cannot list them\)'
fi
tap_log_has "render: the plugin names the file, its buffers, their bytes and handles ($how)" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: pid $pid fd $fd, a file of renderD$minor, holds 6 GEM buffer object\\(s\\) of 12587008 bytes \\(handles 1, 2, 4, 5, 6, 7$tail: "
tap_image_files "render: no image of the render-node file" 0 "$img"/amdgpu-renderD-*.img
tap_alive_verified "render: after the refused dump" "$pid" "$state"
tap_same_task "render: after the refused dump" "$RESULTS_DIR/render.dumped" "$pid"
wl_kill "$pid"
e2e_done
