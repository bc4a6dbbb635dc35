#!/usr/bin/env bash
# Smoke run of cacheflood's main paths (used by `make asan`): smoke.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
bin=$1/cacheflood
set_dir=$2/cacheflood-smoke
"$bin" --make-set "$set_dir" --set-size 3M --file-size 1M --size 5M --bs 256K \
  --keep-set >/dev/null
"$bin" --make-set "$set_dir" --set-size 3M --file-size 1M --size 3M --order random \
  --cold --output-format json --output "$2/cacheflood.json"
grep -q '"bytes"' "$2/cacheflood.json" && rm "$2/cacheflood.json"
rmdir "$set_dir"   # the set is gone; the directory stays, as this run did not make it
head -c 300000 /dev/urandom >"$2/cacheflood-a"
head -c 5000 /dev/urandom >"$2/cacheflood-b"
"$bin" --files "$2/cacheflood-a" "$2/cacheflood-b" --size 1M --bs 64K --order random >/dev/null
"$bin" --files "$2/cacheflood-a" "$2/cacheflood-b" --size 1M --bs 4K >/dev/null
status=0; "$bin" --size 1M 2>/dev/null || status=$?
test "$status" = 2
rm -f "$2/cacheflood-a" "$2/cacheflood-b"
echo "ok cacheflood smoke: made, reused, random and named sets, json and normal output, usage"
