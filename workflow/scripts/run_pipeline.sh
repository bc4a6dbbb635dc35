#!/bin/bash
# What `make` runs: Snakemake under results/.make.lock, held by a flock process for as long as
# this run lives (flock -o: daemons a trial starts, such as the FUSE emulator, do not inherit
# it). A run that was killed (kill -9 of the whole make) leaves paging state changes in the
# journal and Snakemake's lock behind, but not this lock: the next run then restores the
# state (pagelab state recover) and removes Snakemake's stale lock itself before it starts.
set -euo pipefail
if [ -z "${PAGELAB_MAKE_LOCKED:-}" ]; then
    # the lock is waited for 10 s (PAGELAB_MAKE_LOCK_WAIT_S): the processes of a run killed a
    # moment ago may take a moment to finish dying
    wait_s=${PAGELAB_MAKE_LOCK_WAIT_S-10}
    case "$wait_s" in
        ''|*[!0-9]*)
            echo "make: PAGELAB_MAKE_LOCK_WAIT_S must be a whole number of seconds, not '$wait_s'" >&2
            exit 2 ;;
    esac
    mkdir -p results
    rc=0
    PAGELAB_MAKE_LOCKED=1 flock -w "$wait_s" -o -E 75 results/.make.lock bash "$0" "$@" || rc=$?
    if [ "$rc" = 75 ]; then
        echo "make: another make is running in $(pwd) (results/.make.lock is held for $wait_s s); wait for it" >&2
        exit 1
    fi
    exit "$rc"
fi
# The paper from a recording (--config recording=...) runs no trial and changes no paging state,
# so it neither recovers the state nor waits for the machine-wide state lock.
recorded=""
for arg in "$@"; do
    case "$arg" in recording=?*) recorded=1 ;; esac
done
if [ "${EUID:-$(id -u)}" = 0 ] && [ -z "$recorded" ]; then
    pagelab state recover
fi
if [ -d .snakemake/locks ] && [ -n "$(ls -A .snakemake/locks 2>/dev/null)" ]; then
    echo "make: removing the lock an interrupted run left in .snakemake/locks" >&2
    snakemake --unlock "$@" > /dev/null
fi
# Each trial rule sends its output to its log; the trial runner's progress lines (pagelab.run.progress)
# go to this path as well: Snakemake's own standard error, the terminal `make` runs in.
export PAGELAB_PROGRESS="${PAGELAB_PROGRESS:-/proc/$$/fd/2}"
exec snakemake "$@"
