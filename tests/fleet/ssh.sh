#!/bin/sh
# A fake ssh for the fleet tests: ssh.sh HOST COMMAND... runs COMMAND here, in a session of its
# own (as sshd would), as HOST. A host named in the file $PAGELAB_FLEET_DOWN is unreachable
# (exit 255, as ssh exits when it cannot connect).
host=$1
shift
if [ -n "${PAGELAB_FLEET_DOWN:-}" ] && [ -f "$PAGELAB_FLEET_DOWN" ] && grep -qx "$host" "$PAGELAB_FLEET_DOWN"; then
    echo "ssh: connect to host $host port 22: No route to host" >&2
    exit 255
fi
echo "$host $*" >> "${PAGELAB_FLEET_SSH_LOG:-/dev/null}"
exec setsid sh -c "$*"
