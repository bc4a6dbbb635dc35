#!/bin/sh
# cluster-generic status command: status.sh JOBID prints running, success or failed.
dir=".snakemake/fleet-jobs/$1"
if [ -f "$dir/exit" ]; then
    if [ "$(cat "$dir/exit")" = 0 ]; then echo success; else echo failed; fi
elif [ -f "$dir/submitter" ] && ps -o stat= -p "$(cat "$dir/submitter")" 2> /dev/null | grep -qv '^Z'; then
    echo running  # the submitter (ssh to the host, or the local job) is alive and not a zombie
else
    echo failed  # no exit status and no submitter: the job was lost
fi
