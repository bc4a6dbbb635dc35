#!/bin/sh
# Runs on the fleet host (started by submit.sh over ssh): on_host.sh --lock|--no-lock HOST JOBDIR
# JOBSCRIPT WORKDIR. With --lock the whole job holds /tmp/pagelab-fleet-HOST.lock on this host
# (PAGELAB_FLEET_LOCKDIR overrides /tmp): one measurement job per host at a time, whoever submits.
set -u
mode=$1 host=$2 dir=$3 jobscript=$4 workdir=$5
cd "$workdir" || exit 1
export PATH="$workdir/.venv/bin:$PATH"
ps -o pgid= -p $$ | tr -d ' ' > "$dir/pgid"
if [ "$mode" = --no-lock ]; then
    exec sh "$jobscript"
fi
export PAGELAB_FLEET_HOST="$host"
exec flock "${PAGELAB_FLEET_LOCKDIR:-/tmp}/pagelab-fleet-$host.lock" sh "$jobscript"
