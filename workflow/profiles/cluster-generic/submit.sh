#!/bin/sh
# cluster-generic submit command: submit.sh HOST JOBSCRIPT (the profile passes {resources.host}).
# Runs JOBSCRIPT on HOST through ssh (PAGELAB_FLEET_SSH overrides the transport) in the
# background and prints a job id at once; on the host, on_host.sh holds the host's lock for the
# whole job, so two measurement jobs never overlap on one host. HOST 'localhost' (jobs without
# a host, e.g. the native build) runs here, without the lock. Job state: .snakemake/fleet-jobs/ID/
# (host, submitter pid, the remote process group, exit status), read by status.sh and cancel.sh.
set -eu
host=$1
jobscript=$2
here=$(pwd)
profile=$(cd "$(dirname "$0")" && pwd)
id="$(date +%Y%m%d%H%M%S)-$$"
dir="$here/.snakemake/fleet-jobs/$id"
mkdir -p "$dir"
printf '%s\n' "$host" > "$dir/host"
if [ "$host" = localhost ] || [ -z "$host" ]; then
    set -- sh "$profile/on_host.sh" --no-lock "$host" "$dir" "$jobscript" "$here"
else
    # shellcheck disable=SC2086  # the transport is a command line (e.g. "ssh -o BatchMode=yes")
    set -- ${PAGELAB_FLEET_SSH:-ssh -o BatchMode=yes} "$host" sh "$profile/on_host.sh" --lock "$host" "$dir" "$jobscript" "$here"
fi
# In a session of its own (never Snakemake's process group, which cancel.sh must not hit).
setsid sh -c '"$@"; echo $? > "$0/exit.tmp"; mv "$0/exit.tmp" "$0/exit"' "$dir" "$@" < /dev/null > "$dir/out" 2>&1 &
echo $! > "$dir/submitter"
echo "$id"
