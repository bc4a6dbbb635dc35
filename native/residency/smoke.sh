#!/usr/bin/env bash
# Smoke run of residency's main paths (used by `make asan`): smoke.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
bin=$1/residency
d=$2/residency-smoke
mkdir -p "$d/sub"
head -c 300000 /dev/urandom >"$d/a"
head -c 5000 /dev/urandom >"$d/sub/b"
: >"$d/empty"
ln -s a "$d/link"
"$bin" "$d/a" "$d/empty" >/dev/null
"$bin" -r "$d" --output-format json --output "$d.json"
grep -q '"files"' "$d.json" && rm "$d.json"
status=0; "$bin" "$d/a" "$d/missing" "$d" >/dev/null 2>&1 || status=$?
test "$status" = 1
status=0; "$bin" 2>/dev/null || status=$?
test "$status" = 2
rm -rf "$d"
echo "ok residency smoke: files, -r, errors, usage"
