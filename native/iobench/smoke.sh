#!/usr/bin/env bash
# Smoke run of iobench's main paths (used by `make asan`): smoke.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
bin=$1/iobench
f=$2/iobench-smoke.dat
for rw in randwrite read randread write; do
  "$bin" job --file "$f" --size 1M --rw "$rw" --bs 4K --count 200 --lat-log "$f.lat" >/dev/null
done
"$bin" job --file "$f" --rw randread --bs 4K --runtime 100ms --output-format normal >/dev/null
echo "ok iobench smoke: job read/write, json and normal output"
