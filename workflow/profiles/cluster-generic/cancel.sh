#!/bin/sh
# cluster-generic cancel command: cancel.sh JOBID... ends each job's process group on its host
# (the group on_host.sh recorded), then the local submitter.
for id in "$@"; do
    dir=".snakemake/fleet-jobs/$id"
    [ -d "$dir" ] || continue
    host=$(cat "$dir/host")
    if [ -s "$dir/pgid" ]; then
        if [ "$host" = localhost ] || [ -z "$host" ]; then
            kill -TERM "-$(cat "$dir/pgid")" 2> /dev/null
        else
            # shellcheck disable=SC2086
            ${PAGELAB_FLEET_SSH:-ssh -o BatchMode=yes} "$host" kill -TERM "-$(cat "$dir/pgid")" 2> /dev/null
        fi
    fi
    [ -s "$dir/submitter" ] && kill -TERM "$(cat "$dir/submitter")" 2> /dev/null
done
exit 0
