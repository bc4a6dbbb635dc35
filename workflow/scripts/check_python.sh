#!/usr/bin/env bash
# Checks that the Python used to make the venv is 3.11 or newer and has venv and ensurepip.
set -euo pipefail
py=${1:-python3}
if ! command -v "$py" >/dev/null; then
  echo "setup: $py not found; install Python 3.11+ (Debian: apt-get install python3 python3-venv)" >&2
  exit 1
fi
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "setup: $py is $("$py" -V 2>&1); Python 3.11 or newer is needed (make PYTHON=python3.11)" >&2
  exit 1
fi
if ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "setup: $py has no venv/ensurepip; Debian: apt-get install python3-venv" >&2
  exit 1
fi
