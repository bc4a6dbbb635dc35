#!/usr/bin/env bash
# make test: every test, in two pytest processes at once. The files tests/conftest.py's BESIDE
# lists (marker `beside`: no root, device, native build, paging state or clock) run at nice 19,
# on the CPU the hardware tests leave idle while they wait on emulated disks and hogs; the rest
# run in order at normal priority (`pytest -m "not beside"`), on this terminal. The second's
# output follows the first's. Exits non-zero when either failed.
#   bash workflow/scripts/run_tests.sh VENV_BIN [pytest arguments for both]
set -u
bin=${1:?usage: run_tests.sh VENV_BIN [pytest arguments]}
shift
tmp=$(mktemp -d -t pagelab-beside.XXXXXX)
nice -n 19 "$bin/pytest" -m beside -p no:cacheprovider --basetemp="$tmp/pytest" "$@" >"$tmp/beside.log" 2>&1 &
beside=$!
trap 'kill "$beside" 2>/dev/null; wait "$beside"; rm -rf "$tmp"' INT TERM
"$bin/pytest" -m "not beside" "$@"
main=$?
wait "$beside"
rc=$?
echo "=================== the tests run beside, at nice 19 (pytest -m beside) ===================="
cat "$tmp/beside.log"
rm -rf "$tmp"
# 5: pytest collected nothing (arguments that name files of one side only)
[ "$main" -eq 5 ] && main=0
[ "$rc" -eq 5 ] && rc=0
if [ "$main" -ne 0 ]; then exit "$main"; fi
exit "$rc"
