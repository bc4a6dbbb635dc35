#!/usr/bin/env bash
# Smoke run of hog's main paths (used by `make asan`): smoke.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
bin=$1/hog
dir=$2/hog-smoke
mkdir -p "$dir"
victim_pid=
trap '[ -n "$victim_pid" ] && kill "$victim_pid" 2>/dev/null; rm -rf "$dir"' EXIT

expect_status() {   # expect_status N command...
  local want=$1; shift
  local got=0
  "$@" >/dev/null 2>"$dir/err" || got=$?
  if [ "$got" != "$want" ]; then
    echo "not ok: '$*' exited $got, not $want:"; cat "$dir/err"; exit 1
  fi
}

"$bin" run --size 4M --rounds 2 --fill zero >/dev/null
"$bin" run --size 4M --fill ratio:0.5 --hold 10ms --output-format json --output "$dir/run.json"
grep -q '"command": "run"' "$dir/run.json"
"$bin" run --size 4M --fill random --touch prefault --output-format json >/dev/null
"$bin" populate --size 4M --rounds 2 >/dev/null
"$bin" populate --size 4M --method write --output-format json >/dev/null
"$bin" dump --size 1M --fill ratio:0.25 --seed 3 --output "$dir/dump"
[ "$(stat -c %s "$dir/dump")" = 1048576 ]

"$bin" victim --size 4M --fill ratio:0.5 --trim pageout --order random --verify --output-format json >/dev/null
"$bin" victim --size 4M --ready "$dir/ready" --go "$dir/go" --timeout 20s --order seq --verify \
  >"$dir/victim.out" &
victim_pid=$!
for _ in $(seq 2000); do [ -e "$dir/ready" ] && break; sleep 0.01; done
touch "$dir/go"
wait "$victim_pid"
victim_pid=
grep -q "pages OK" "$dir/victim.out"

"$bin" victim --size 4M --go-signal --timeout 20s --order seq --output-format json >"$dir/victim.json" &
victim_pid=$!
sleep 0.2
kill -USR1 "$victim_pid"
wait "$victim_pid"
victim_pid=
grep -q '"go": "signal"' "$dir/victim.json"

# two hogs side by side at a --barrier; then one killed mid-round: the other stops at once (3)
"$bin" run --size 4M --rounds 2 --fill zero --barrier "$dir/b1" --parties 2 >/dev/null &
victim_pid=$!
"$bin" run --size 4M --rounds 2 --fill zero --barrier "$dir/b1" --parties 2 >/dev/null
wait "$victim_pid"
"$bin" run --size 4M --rounds 2 --fill zero --barrier "$dir/b2" --parties 2 --hold 60s >/dev/null &
victim_pid=$!
got=0
"$bin" run --size 4M --rounds 2 --fill zero --barrier "$dir/b2" --parties 2 >/dev/null 2>"$dir/err" &
waiter=$!
for _ in $(seq 3000); do [ "$(od -An -tu4 -N4 "$dir/b2" 2>/dev/null | tr -d ' ')" = 3 ] && break; sleep 0.01; done
kill -9 "$victim_pid"
wait "$waiter" || got=$?
victim_pid=
[ "$got" = 3 ] && grep -q "is gone (killed or exited)" "$dir/err" ||
  { echo "not ok: a hog whose partner died exited $got:"; cat "$dir/err"; exit 1; }

expect_status 2 "$bin" run --size 0
expect_status 2 "$bin" run --size 4M --fill ratio:2
expect_status 2 "$bin" victim --size 4M --go x --go-signal --order seq
expect_status 2 "$bin" victim --size 4M
grep -q "missing --order" "$dir/err"
expect_status 2 "$bin" run --size 1024T
expect_status 2 "$bin" run --size 4M --output "$dir/no-such-dir/run.txt"
expect_status 2 "$bin" run --size 4M --json
expect_status 1 "$bin" victim --size 4M --go "$dir/never" --timeout 5ms --order seq
echo "ok hog smoke: run, populate, dump, victim (file and signal go, pageout, verify), --output, barrier, errors (a missing --order too)"
