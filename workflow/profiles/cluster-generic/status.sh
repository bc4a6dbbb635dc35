#!/bin/sh
# cluster-generic status command: status.sh JOBID prints running, success or failed.
dir=".snakemake/fleet-jobs/$1"
if [ -f "$dir/exit" ]; then
    if [ "$(cat "$dir/exit")" = 0 ]; then echo success; else echo failed; fi
elif [ -f "$dir/submitter" ] && kill -0 "$(cat "$dir/submitter")" 2> /dev/null; then
    echo running
else
    echo failed  # no exit status and no submitter: the job was lost
fi
