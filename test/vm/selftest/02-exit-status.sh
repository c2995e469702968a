#!/bin/bash
# Runner self-test: no TAP, a failing status.
echo "plain failure"
exit 3
