#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A process with a secondary KFD context (AMDKFD_IOC_CREATE_PROCESS, KFD 1.19, Linux 7.x) is
# refused at dump with an error that names the contexts, and is left running as it was.
#
# Linux 7.3 checkpoints each context through its own /dev/kfd file and refuses none, but saves
# nothing that says which context it was, restores into the context of the file it is given and
# resumes only the primary: restored, every context would land in the primary. So the plugin
# refuses. Skipped where the kernel (the emulator's header) has no CREATE_PROCESS: the bookworm
# guest.
# timeout: 120
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

state=$RESULTS_DIR/contexts.state
if ! emu_reload preset=2xmi210; then
	tap_not_ok "load the emulator (2xmi210)"
	e2e_done
	exit
fi
pid=0
spawn pid contexts "$E2E_BIN/kfd_contexts" --state "$state"
wait_for "grep -q '^READY ' '$RESULTS_DIR/contexts.out' || ! kill -0 $pid 2>/dev/null" 30
if ! grep -q "^READY $pid\$" "$RESULTS_DIR/contexts.out"; then
	wait "$pid" 2>/dev/null
	if ! kill -0 "$pid" 2>/dev/null && grep -q "CREATE_PROCESS" "$RESULTS_DIR/contexts.out"; then
		tap_skip "a process with a secondary KFD context" \
			"no CREATE_PROCESS here: $(tail -n1 "$RESULTS_DIR/contexts.out")"
		e2e_done
		exit
	fi
	tap_not_ok "the process makes a secondary KFD context" "$(tail -n3 "$RESULTS_DIR/contexts.out")"
	e2e_done
	exit
fi
tap_ok "the process makes a secondary KFD context"
if [ -d "/sys/class/kfd/kfd/proc/$pid/context_0" ]; then
	tap_ok "sysfs lists it as /sys/class/kfd/kfd/proc/$pid/context_0"
else
	tap_not_ok "sysfs lists it as /sys/class/kfd/kfd/proc/$pid/context_0"
fi

if wl_dump "$pid" /tmp/img-36; then
	tap_not_ok "criu dump of a process with a secondary KFD context fails" "it succeeded"
else
	tap_ok "criu dump of a process with a secondary KFD context fails"
fi
tap_log_has "the plugin names the secondary context it found" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: .*pid $pid has 1 secondary KFD context\\(s\\) \\(context_0 in /sys/class/kfd/kfd/proc/$pid\\)"
tap_log_has "the plugin resumed the queues it had paused" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: pid $pid: queues resumed"
if [ -z "$(ls /tmp/img-36/amdgpu-* 2>/dev/null)" ]; then
	tap_ok "the refused dump left no GPU image"
else
	tap_not_ok "the refused dump left no GPU image" "$(ls /tmp/img-36/amdgpu-*)"
fi
if grep "^process pid $pid " "$EMU_DEBUGFS/processes" 2>/dev/null | grep -q " paused 1 "; then
	tap_not_ok "no context of the task stays paused" "$(grep "^process pid $pid " "$EMU_DEBUGFS/processes")"
else
	tap_ok "no context of the task stays paused"
fi
rm -f "$state.verify"
kill -USR1 "$pid" 2>/dev/null
wait_for "[ -s '$state.verify' ]" 20
line=$(head -n1 "$state.verify" 2>/dev/null)
if [[ $line == "CONTEXTS OK 2 2" ]]; then
	tap_ok "the task runs on, both its contexts answer (2 GPUs each)"
else
	tap_not_ok "the task runs on, both its contexts answer (2 GPUs each)" "${line:-no answer}"
fi
wl_kill "$pid"
e2e_done
