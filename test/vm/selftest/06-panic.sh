#!/bin/bash
# Runner self-test: the guest kernel panics in the middle of a scenario.
echo "about to panic"
echo c >/proc/sysrq-trigger
