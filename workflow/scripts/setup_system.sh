#!/usr/bin/env bash
# Makes sure the Debian packages the pipeline needs are installed. As root with apt-get, installs
# what is missing (apt-get update first, once); otherwise prints the exact command and fails.
# Quick when nothing is missing: a dpkg-query per package.
set -euo pipefail

PACKAGES=(
  build-essential pkg-config            # native tools
  liburing-dev libfuse3-dev fuse3       # io_uring engine, the FUSE device emulator
  fio lz4                               # peers: fio for iobench, lz4 to check hog --fill ratio:R
  texlive-latex-base texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended
  latexmk poppler-utils                 # the paper, and pdftotext for its tests
  strace                                # tests: simdisk's scheduling class around a reply
  slurmctld slurmd slurm-client munge   # the fleet on Slurm: a local cluster (workflow/scripts/local_slurm.py)
  git
)

if ! command -v dpkg-query >/dev/null; then
  missing=()
  for cmd in cc make pkg-config fio latexmk pdflatex pdftotext git; do
    command -v "$cmd" >/dev/null || missing+=("$cmd")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: not a Debian system; install these commands with your package manager: ${missing[*]}" >&2
    echo "setup: (and the headers of liburing and libfuse3)" >&2
    exit 1
  fi
  exit 0
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null | grep -qx installed || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "setup: missing Debian packages: ${missing[*]}" >&2
  echo "setup: install them with:  sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
