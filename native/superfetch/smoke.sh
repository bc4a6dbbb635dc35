#!/usr/bin/env bash
# Smoke run of superfetch's main paths (used by `make asan`): smoke.sh BUILD_DIR SCRATCH_DIR
# Watches a sleeping process in the memory cgroup hierarchy's root (nothing is swapped there,
# so nothing is read): it gets ready, sees --go, finishes its (empty) restore, stops at --stop
# and prints its report; bad options and a missing required one exit 2.
set -euo pipefail
bin=$1/superfetch
d=$2/superfetch-smoke
mkdir -p "$d"
sleep 30 &
victim=$!
trap 'kill "$victim" 2>/dev/null; rm -rf "$d"' EXIT
cg=/sys/fs/cgroup/memory
[ -e "$cg/memory.limit_in_bytes" ] || cg=/sys/fs/cgroup
"$bin" --pid "$victim" --cgroup "$cg" --mode after --go "$d/go" --ready "$d/ready" --done "$d/done" --stop "$d/stop" \
  --poll 10ms --group 128K --priority low --depth 1 --timeout 20s >"$d/report.json" &
agent=$!
for _ in $(seq 2000); do [ -e "$d/ready" ] && break; sleep 0.01; done
touch "$d/go"
for _ in $(seq 2000); do [ -e "$d/done" ] && break; sleep 0.01; done
touch "$d/stop"
wait "$agent"
grep -q '"stopped_by":"stop file"' "$d/report.json"
status=0; "$bin" --pid "$victim" --cgroup "$d" --mode after --go "$d/go" --poll 10ms --group 128K --priority low --depth 1 \
  2>/dev/null || status=$?
test "$status" = 2
status=0; "$bin" --pid "$victim" --cgroup "$cg" --mode after --go "$d/go" --group 128K --priority low --depth 1 \
  2>"$d/err" || status=$?
test "$status" = 2 && grep -q -- '--poll' "$d/err"
status=0; "$bin" --pid "$victim" --cgroup "$cg" --go "$d/go" --poll 10ms --group 128K --priority low --depth 1 \
  2>"$d/err" || status=$?
test "$status" = 2 && grep -q -- 'missing --mode' "$d/err"
echo "ok superfetch smoke: ready, go, done, stop, report, usage"
