#!/usr/bin/env bash
# Smoke run of iobench's main paths (used by `make asan`): smoke.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
bin=$1/iobench
f=$2/iobench-smoke.dat
for rw in randwrite read randread write; do
  "$bin" job --file "$f" --size 1M --rw "$rw" --bs 4K --count 200 --lat-log "$f.lat" >/dev/null
  "$bin" job --file "$f" --rw "$rw" --bs 4K --count 200 --engine io_uring --qd 8 \
    --lat-log "$f.lat" >/dev/null
done
"$bin" job --file "$f" --rw randread --bs 4K --runtime 100ms --output-format json --output "$f.json"
grep -q '"jobs"' "$f.json"
"$bin" job --file "$f" --rw randread --bs 4K --direct --engine io_uring --qd 16 --ramp 20ms \
  --runtime 100ms --keep-cache >/dev/null
if "$bin" job --file "$f" --rw read --bs 4K --qd 4 --count 1 2>/dev/null; then
  echo "not ok iobench smoke: --qd 4 with psync was accepted"; exit 1
fi
cm=$2/iobench-smoke-cm.dat
"$bin" crystalmark --file "$cm" --size 2M --sets 2 --trace "$cm.trace" --keep-file >/dev/null
"$bin" crystalmark --file "$cm" --size 2M --sets 1 --keep-file --buffered \
  --output-format json >/dev/null
rm -f "$cm"
"$bin" crystalmark --file "$cm" --size 1M --sets 1 --runtime 1ms >/dev/null
test ! -e "$cm"
rm -f "$f" "$f.lat" "$f.json" "$cm.trace"
echo "ok iobench smoke: job psync and io_uring read/write, json and normal output, crystalmark"
