#!/bin/bash
# What `make` runs: Snakemake under a lock that this run holds (with its children) until it
# ends. A run that was killed (kill -9 of the whole make) leaves paging state changes in the
# journal and Snakemake's lock behind but not this lock: the next run then restores the state
# (pagelab state recover) and removes Snakemake's stale lock itself before it starts.
set -euo pipefail
mkdir -p results
exec 9>results/.make.lock
if ! flock -n 9; then
    echo "make: another make is running in $(pwd) (results/.make.lock is held); wait for it" >&2
    exit 1
fi
if [ "${EUID:-$(id -u)}" = 0 ]; then
    pagelab state recover
fi
if [ -d .snakemake/locks ] && [ -n "$(ls -A .snakemake/locks 2>/dev/null)" ]; then
    echo "make: removing the lock an interrupted run left in .snakemake/locks" >&2
    snakemake --unlock "$@" > /dev/null
fi
snakemake "$@"
