# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Dumping into and restoring from criu's image streamer (criu --stream), with the stand-in of
# test/streamer/ (streamer_start and streamer_wait of test/vm/lib.sh) in place of
# criu-image-streamer, as TAP results. Sourced by test/e2e/lib.sh.
#
#   stream_dump <name> <pid> <img> <stream> [criu args...]   criu dump --stream into the stand-in,
#                                     which writes the stream to the file <stream>; TAP results:
#                                     the dump, the capture, no plugin image left in -D
#   stream_restore <img> <stream> [criu args...]   criu restore --stream from the stand-in serving
#                                     <stream>; returns criu's status; STREAMER_STATUS: the
#                                     stand-in's (it fails when an image is asked for twice)
#   tap_same_order <name>             one TAP result: the last restore asked for the plugin's
#                                     images once each, in the order the last dump streamed them

streamer_log=$RESULTS_DIR/streamer.log
streamer_mark() { if [ -e "$streamer_log" ]; then wc -l <"$streamer_log"; else echo 0; fi; }
# plugin_images <mark> <capture|serve>: the plugin's images the stand-in moved since the mark.
plugin_images() {
	tail -n +"$(($1 + 1))" "$streamer_log" | awk -v what="$2" '$2 == what && $3 ~ /^amdgpu-/ { print $3 }' |
		tr '\n' ' '
}

# stream_dump <name> <pid> <img> <stream> [criu args...]: dump into the stand-in; TAP results.
stream_dump() {
	local name=$1 pid=$2 img=$3 stream=$4 left
	shift 4
	rm -rf "$img" "$stream"
	DUMP_MARK=$(streamer_mark)
	if ! streamer_start capture "$img" "$stream"; then
		tap_not_ok "$name: the image streamer stand-in listens" "$(tail -n2 "$streamer_log")"
		return 1
	fi
	if criu_dump "$pid" "$img" --link-remap --stream "$@"; then
		tap_ok "$name: criu dump --stream"
	else
		tap_not_ok "$name: criu dump --stream" "$(criu_log_names "$CRIU_LAST_LOG")"
	fi
	tap_check "$name: the stand-in captured the stream" streamer_wait
	left=$(cd "$img" && compgen -G 'amdgpu-*' | head -n3)
	if [ -z "$left" ] && [ -n "$(plugin_images "$DUMP_MARK" capture)" ]; then
		tap_ok "$name: the plugin's images went into the stream, none into -D"
	else
		tap_not_ok "$name: the plugin's images went into the stream, none into -D" \
			"in -D: ${left:-none}; streamed: $(plugin_images "$DUMP_MARK" capture)"
	fi
}

# stream_restore <img> <stream> [criu args...]: restore from the stand-in; returns criu's status
# and leaves the stand-in's in STREAMER_STATUS.
stream_restore() {
	local img=$1 stream=$2 status
	shift 2
	RESTORE_MARK=$(streamer_mark)
	streamer_start serve "$img" "$stream" || { STREAMER_STATUS=listen; return 1; }
	criu_restore "$img" --stream "$@"
	status=$?
	streamer_wait
	STREAMER_STATUS=$?
	return $status
}

# tap_same_order <name>: the restore asked for the plugin's images once each, as captured.
tap_same_order() {
	local captured served
	captured=$(plugin_images "$DUMP_MARK" capture)
	served=$(plugin_images "$RESTORE_MARK" serve)
	if [ "$STREAMER_STATUS" = 0 ] && [ "$captured" = "$served" ]; then
		tap_ok "$1: each plugin image read once, in the order it was streamed"
	else
		tap_not_ok "$1: each plugin image read once, in the order it was streamed" \
			"stand-in status $STREAMER_STATUS; captured: $captured; served: $served"
	fi
}
