#!/usr/bin/env bash
# Checks that the Python used to make the venv is 3.11 or newer and has venv and ensurepip.
# The venv is make's first step, before config/config.yaml is validated and before the route's
# Debian packages: when python3 has no venv module (Debian without python3-venv), that one
# package is installed first (setup_system.sh venv, which says so; as root with apt, otherwise it
# prints the command and fails). Another interpreter (make PYTHON=..., a pyenv one) is only named.
set -euo pipefail
py=${1:-python3}
has_venv() { "$py" -c 'import venv, ensurepip' 2>/dev/null; }
if ! command -v "$py" >/dev/null; then
  echo "setup: $py not found; install Python 3.11+ (Debian: apt-get install python3 python3-venv)" >&2
  exit 1
fi
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "setup: $py is $("$py" -V 2>&1); Python 3.11 or newer is needed (make PYTHON=python3.11)" >&2
  exit 1
fi
debian_python3() {  # the distribution's own python3 (prefix /usr), whose ensurepip python3-venv holds
  [ "${py##*/}" = python3 ] && [ "$("$py" -c 'import sys; print(sys.base_prefix)')" = /usr ] &&
    command -v dpkg-query >/dev/null
}
if ! has_venv && debian_python3; then
  bash "$(dirname "${BASH_SOURCE[0]}")/setup_system.sh" venv
fi
if ! has_venv; then
  echo "setup: $py has no venv/ensurepip; Debian: apt-get install python3-venv" >&2
  exit 1
fi
