#!/usr/bin/env bash
# Makes sure the Debian packages of one route are installed:
#   setup_system.sh venv      Python with its venv module only: make's first step (check_python.sh)
#                             asks for it when python3 cannot make the venv, before the
#                             configuration is validated and before the route's other packages
#   setup_system.sh paper     the paper from a recording (make PROFILE=recorded): Python with its
#                             venv module, TeX Live, latexmk, poppler; no compiler, FUSE, fio or Slurm
#   setup_system.sh measure   the trials as well (make): build tools, FUSE, liburing, fio, lz4
#   setup_system.sh test      every test as well (make test): strace, Slurm and munge
#   setup_system.sh --list SET   print the set's packages, one a line (SET: venv, paper, ...)
# As root with apt-get, installs what is missing (apt-get update first, once); otherwise prints
# the exact command and fails. Quick when nothing is missing: one dpkg-query for the set, which
# reads the dpkg database of DPKG_ADMINDIR when that is set (dpkg's own variable).
set -euo pipefail

VENV=(
  python3 python3-venv                  # the venv made from requirements.lock
)
PAPER=(
  "${VENV[@]}"
  texlive-latex-base texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended
  latexmk poppler-utils                 # the paper, and pdftotext for its tests
  git                                   # provenance: the commit a run and the paper come from
)
MEASURE=(
  build-essential pkg-config            # native tools
  liburing-dev libfuse3-dev fuse3       # io_uring engine, the FUSE device emulator
  fio lz4                               # peers: fio for iobench, lz4 to check hog --fill ratio:R
)
TEST=(
  strace                                # tests: simdisk's scheduling class around a reply
  slurmctld slurmd slurm-client munge   # the fleet on Slurm: a local cluster (workflow/scripts/local_slurm.py)
)
# The commands each set gives, for a system without dpkg.
VENV_CMDS=(python3)
PAPER_CMDS=(python3 latexmk pdflatex pdftotext git)
MEASURE_CMDS=(cc make pkg-config fio lz4 fusermount3)
TEST_CMDS=(strace slurmctld slurmd sbatch munged)

usage() {
  echo "usage: setup_system.sh venv|paper|measure|test  (or --list venv|paper|measure|test)" >&2
  exit 2
}

list=0
if [ "${1:-}" = --list ]; then list=1; shift; fi
[ $# -eq 1 ] || usage
note=""
case "$1" in
  venv)    packages=("${VENV[@]}");                          commands=("${VENV_CMDS[@]}")
           note=" alone (the venv module, which checking config/config.yaml needs; the route's other packages come after that check)" ;;
  paper)   packages=("${PAPER[@]}");                         commands=("${PAPER_CMDS[@]}") ;;
  measure) packages=("${PAPER[@]}" "${MEASURE[@]}");         commands=("${PAPER_CMDS[@]}" "${MEASURE_CMDS[@]}") ;;
  test)    packages=("${PAPER[@]}" "${MEASURE[@]}" "${TEST[@]}")
           commands=("${PAPER_CMDS[@]}" "${MEASURE_CMDS[@]}" "${TEST_CMDS[@]}") ;;
  *)       usage ;;
esac
if [ "$list" = 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

if ! command -v dpkg-query >/dev/null; then
  missing=()
  for cmd in "${commands[@]}"; do
    command -v "$cmd" >/dev/null || missing+=("$cmd")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: not a Debian system; install these commands with your package manager: ${missing[*]}" >&2
    case "$1" in venv|paper) ;; *) echo "setup: (and the headers of liburing and libfuse3)" >&2 ;; esac
    exit 1
  fi
  exit 0
fi

# One query for the whole set: each installed package's name (a missing one prints nothing).
installed=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' "${packages[@]}" 2>/dev/null \
            | awk '$1 == "installed" {print $2}' || true)
missing=()
for pkg in "${packages[@]}"; do
  grep -qxF "$pkg" <<<"$installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "setup: missing Debian packages ($1 set): ${missing[*]}; install them with:  sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}$note"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
