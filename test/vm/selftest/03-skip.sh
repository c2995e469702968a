#!/bin/bash
# Runner self-test: no TAP, status 77; the last line is the reason.
echo "skipping: nothing to do"
exit 77
