#!/bin/bash
# Runner self-test: runs past its limit, leaving a process of its own session behind.
# timeout: 3
setsid sleep 1000 &
echo "hanging"
sleep 100
