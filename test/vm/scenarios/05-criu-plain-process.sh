#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# criu dumps and restores a plain process (no GPU files) in the guest, with our plugin directory
# on --libdir: the plugin must stay out of the way (its hooks answer -ENOTSUP for files that are
# not a GPU's), and the restored process must carry on where it stopped. Then the same through
# criu's image streamer (--stream) and our stand-in for criu-image-streamer (test/streamer/): the
# stand-in speaks criu's protocol if criu alone round-trips through it.
# timeout: 180
. test/vm/lib.sh

work=/tmp/plain-process
rm -rf "$work"
mkdir -p "$work"

counter_value() { cat "$work/counter" 2>/dev/null || echo 0; }

# Counts up in a file ten times a second; each value is written to a new file that replaces the
# old one, so a reader never sees a half-written number.
counter_loop() {
	spawn "$1" counter bash -c '
		i=0
		while :; do
			i=$((i + 1))
			echo $i >"$0/counter.new" && mv "$0/counter.new" "$0/counter"
			sleep 0.1
		done' "$work"
}

# One round: start, dump (which kills), check it is gone, restore, check it counts on.
# $1: the result-name suffix; the criu wrappers use $CRIU_LIBDIR as it is set on entry. With
# $2 = --stream, the images go through the image streamer stand-in instead of files.
round() {
	local what=$1 stream=${2:-} pid before after
	local img=$work/img-$what stream_file=$work/stream-$what
	rm -f "$work/counter"
	counter_loop pid
	if ! wait_for '[ "$(counter_value)" -ge 3 ]' 20; then
		tap_not_ok "$what: workload starts counting" "counter at $(counter_value)"
		kill "$pid" 2>/dev/null
		return
	fi

	if [ -n "$stream" ] && ! streamer_start capture "$img" "$stream_file"; then
		tap_not_ok "$what: the image streamer stand-in listens" "$(tail -n3 "$RESULTS_DIR/streamer.log")"
		kill "$pid" 2>/dev/null
		return
	fi
	if criu_dump "$pid" "$img" $stream; then
		tap_ok "$what: criu dump"
	else
		tap_not_ok "$what: criu dump" "see $CRIU_LAST_LOG"
		kill "$pid" 2>/dev/null
		[ -z "$stream" ] || streamer_wait
		return
	fi
	if [ -n "$stream" ]; then
		# criu writes its statistics (stats-dump) into -D even when streaming; images never.
		if streamer_wait && [ -s "$stream_file" ] && [ -z "$(ls "$img" | grep '\.img$')" ]; then
			tap_ok "$what: every image went through the streamer ($(stat -c %s "$stream_file") bytes, no image in -D)"
		else
			tap_not_ok "$what: every image went through the streamer" \
				"$(tail -n2 "$RESULTS_DIR/streamer.log"); in -D: $(ls "$img" | head -n3)"
		fi
	fi
	local dump_log=$CRIU_LAST_LOG
	before=$(counter_value)
	sleep 0.5
	if ! kill -0 "$pid" 2>/dev/null && [ "$(counter_value)" = "$before" ]; then
		tap_ok "$what: the dumped process is gone and stopped counting at $before"
	else
		tap_not_ok "$what: the dumped process is gone" "pid $pid alive or counter moved"
	fi

	if [ -n "$stream" ] && ! streamer_start serve "$img" "$stream_file"; then
		tap_not_ok "$what: the image streamer stand-in serves" "$(tail -n3 "$RESULTS_DIR/streamer.log")"
		return
	fi
	if criu_restore "$img" $stream; then
		tap_ok "$what: criu restore"
	else
		tap_not_ok "$what: criu restore" "see $CRIU_LAST_LOG"
		[ -z "$stream" ] || streamer_wait
		return
	fi
	if [ -n "$stream" ]; then
		if streamer_wait; then
			tap_ok "$what: the streamer served every image criu asked for, each once"
		else
			tap_not_ok "$what: the streamer served every image criu asked for, each once" \
				"$(tail -n2 "$RESULTS_DIR/streamer.log")"
		fi
	fi
	local restore_log=$CRIU_LAST_LOG
	if wait_for '[ "$(counter_value)" -ge $((before + 3)) ]' 20; then
		after=$(counter_value)
		tap_ok "$what: the restored process counts on ($before -> $after, same pid $pid)"
	else
		tap_not_ok "$what: the restored process counts on" "counter stuck at $(counter_value)"
	fi
	if [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$VM_REPO" ]; then
		tap_ok "$what: the restored process has its working directory back"
	else
		tap_not_ok "$what: the restored process has its working directory back"
	fi

	# Beyond the two kerndat probe exits every criu log has, nothing may fail. (Warnings happen:
	# "Will restore <pid> with interrupted system call" for a task caught in a syscall.)
	local errors
	errors=$(grep -h 'Error' "$dump_log" "$restore_log" |
		grep -v 'util.c:[0-9]*): exited, status=1$')
	if [ -z "$errors" ]; then
		tap_ok "$what: no errors in the criu logs"
	else
		tap_not_ok "$what: no errors in the criu logs" "$(echo "$errors" | head -n5)"
	fi
	if [ -n "$CRIU_LIBDIR" ]; then
		# criu logs each plugin it loads; ours must be among them.
		if grep -q 'Plugin "amdgpu_plugin"' "$dump_log" &&
			grep -q 'Plugin "amdgpu_plugin"' "$restore_log"; then
			tap_ok "$what: criu loaded amdgpu_plugin for dump and restore"
		else
			tap_not_ok "$what: criu loaded amdgpu_plugin for dump and restore"
		fi
	fi

	kill -9 "$pid" 2>/dev/null
	wait_for '! kill -0 "$pid" 2>/dev/null' 10 ||
		tap_not_ok "$what: the restored process can be killed"
}

# The stand-in first against criu alone, then with the plugin loaded.
stream_rounds() {
	if [ ! -x "$IMAGE_STREAMER" ]; then
		tap_skip "--stream rounds" "the image streamer stand-in is not built ($IMAGE_STREAMER)"
		return
	fi
	local saved=$CRIU_LIBDIR
	CRIU_LIBDIR=
	round "no plugin, stream" --stream
	CRIU_LIBDIR=$saved
	[ -z "$CRIU_LIBDIR" ] || round "plugin, stream" --stream
}

saved_libdir=$CRIU_LIBDIR
CRIU_LIBDIR=
round "no plugin"
CRIU_LIBDIR=$saved_libdir
if [ -n "$CRIU_LIBDIR" ]; then
	round "plugin"
else
	tap_skip "plugin: dump and restore with --libdir" "plugins/amdgpu/amdgpu_plugin.so is not built"
fi
stream_rounds
tap_done
