#!/bin/sh
# cluster-generic status command: status.sh JOBID prints running, success or failed.
# The exit file is read again after the submitter is found gone: the job may have written it and
# exited between the two looks (the submitter writes it before it exits), and that job succeeded.
dir=".snakemake/fleet-jobs/$1"
if [ ! -f "$dir/exit" ] && [ -f "$dir/submitter" ] &&
    ps -o stat= -p "$(cat "$dir/submitter")" 2> /dev/null | grep -qv '^Z'; then
    echo running  # the submitter (ssh to the host, or the local job) is alive and not a zombie
elif [ -f "$dir/exit" ]; then
    if [ "$(cat "$dir/exit")" = 0 ]; then echo success; else echo failed; fi
else
    echo failed  # no exit status and no submitter: the job was lost
fi
