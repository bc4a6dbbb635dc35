#!/bin/sh
# Fake status command for the fleet tests, as the cluster-generic plugin's own tests have: the
# profile's real status.sh with ssh replaced by tests/fleet/ssh.sh, so each job runs on this machine
# under the host identity of its {resources.host} (PAGELAB_FLEET_HOST) and the host's own lock.
PAGELAB_FLEET_SSH="$(cd "$(dirname "$0")" && pwd)/ssh.sh"
export PAGELAB_FLEET_SSH
exec sh workflow/profiles/cluster-generic/status.sh "$@"
