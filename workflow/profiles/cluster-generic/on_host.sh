#!/bin/sh
# Runs on the fleet host (started by submit.sh over ssh): on_host.sh --lock|--no-lock HOST JOBDIR
# JOBSCRIPT WORKDIR. With --lock the whole job holds the host's lock on this host,
# /run/pagelab/fleet/HOST.lock (`pagelab fleet lock`: a directory of this user's, mode 0700, and
# a lock file opened without following a symbolic link; PAGELAB_FLEET_LOCKDIR names another
# directory): one measurement job per host at a time, whoever submits.
set -u
mode=$1 host=$2 dir=$3 jobscript=$4 workdir=$5
cd "$workdir" || exit 1
export PATH="$workdir/.venv/bin:$PATH"
ps -o pgid= -p $$ | tr -d ' ' > "$dir/pgid"
if [ "$mode" = --no-lock ]; then
    exec sh "$jobscript"
fi
export PAGELAB_FLEET_HOST="$host"
exec pagelab fleet lock "$host" -- sh "$jobscript"
