#!/usr/bin/env bash
# Smoke run of simdisk's main paths (used by `make asan`): smoke.sh BUILD_DIR SCRATCH_DIR
# Predictions for every profile and pattern, a refused profile, and (as root with /dev/fuse)
# a mount of each model with reads, writes, fsync, stats, trace and a saved cache state.
set -euo pipefail
bin=$1/simdisk
dir=$(mktemp -d "$2/simdisk.XXXXXX")
pid=
cleanup() {
  if mountpoint -q "$dir/mnt" 2>/dev/null; then fusermount3 -u "$dir/mnt" || fusermount3 -uz "$dir/mnt"; fi
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  rm -rf "$dir"
}
trap cleanup EXIT

for p in hdd5400-2008 usbstick-2008 tiered-readyboost zero; do
  for rw in read write randread randwrite; do
    "$bin" model --profile "$p" --rw "$rw" --bs 64k --span 1G --hit-ratio 0.5 >/dev/null
    "$bin" model --profile "$p" --rw "$rw" --bs 64k --span 1G --output-format json >/dev/null
  done
done
"$bin" qualify --profile usbstick-2008 --output-format json --output "$dir/q.json" >/dev/null
grep -q '"readyboost": true' "$dir/q.json"
printf 'model: hdd\nrpm: -1\n' > "$dir/bad.yaml"
if "$bin" model --profile "$dir/bad.yaml" --rw read --bs 4k 2>/dev/null; then
  echo "not ok simdisk smoke: a bad profile was accepted"; exit 1
fi

if [ "$(id -u)" != 0 ] || [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
  echo "ok simdisk smoke: model and profile checks (mounts skipped: need root and /dev/fuse)"
  exit 0
fi

mount_run() {   # profile size extra-args...: mount, do IO, unmount
  local profile=$1 size=$2; shift 2
  mkdir -p "$dir/mnt"
  "$bin" mount "$dir/mnt" --profile "$profile" --backing "$dir/backing-$profile" --size "$size" \
    --foreground --ready "$dir/ready" --trace "$dir/trace.csv" "$@" 2>"$dir/log" &
  pid=$!
  for _ in $(seq 500); do [ -e "$dir/ready" ] && break; sleep 0.01; done
  [ -e "$dir/ready" ] || { cat "$dir/log"; echo "not ok simdisk smoke: $profile never ready"; exit 1; }
  dd if=/dev/urandom of="$dir/data" bs=64k count=4 status=none
  dd if="$dir/data" of="$dir/mnt/disk" bs=64k seek=3 oflag=direct conv=notrunc,fsync status=none
  dd if="$dir/mnt/disk" of="$dir/back" bs=64k skip=3 count=4 iflag=direct status=none
  cmp "$dir/data" "$dir/back"
  dd if="$dir/mnt/disk" of=/dev/null bs=64k skip=3 count=4 iflag=direct status=none   # read twice
  sleep 0.2                                                                             # idle work
  dd if="$dir/mnt/disk" of=/dev/null bs=4096 skip=1 count=3 status=none   # unaligned to 64k
  printf 'abc' | dd of="$dir/mnt/disk" bs=1 seek=5 conv=notrunc status=none
  [ "$(dd if="$dir/mnt/disk" bs=1 skip=5 count=3 status=none)" = abc ]
  grep -q '"reads"' "$dir/mnt/stats"
  fusermount3 -u "$dir/mnt"
  wait "$pid" || { cat "$dir/log"; echo "not ok simdisk smoke: $profile daemon failed"; exit 1; }
  pid=
  [ "$(wc -l < "$dir/trace.csv")" -gt 5 ]
}
mount_run hdd5400-2008 64M
mount_run usbstick-2008 64M --backing-io buffered
mount_run zero 16M
mount_run tiered-readyboost 64M --cache-state "$dir/state" --set policy=on-write,compression=lz4,cache_capacity_bytes=65536
[ -s "$dir/state" ]
mount_run tiered-readyboost 64M --cache-state "$dir/state" --set policy=readyboost,prefetch_idle_ms=1
grep -q ',prefetch,' "$dir/trace.csv"
echo "ok simdisk smoke: model, profile checks, and a mount of every model with IO, stats, trace, cache state"
