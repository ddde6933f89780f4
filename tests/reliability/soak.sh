#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak: train a small model for many steps (default 5000) on thread ranks,
# with evaluation and periodic checkpoints, and sample the process's RSS
# once a second from /proc. Prints the samples' summary: RSS after warm-up,
# at the end, the maximum, and the growth over the second half of the run
# (a leak shows as steady growth; noise is a few hundred KiB).
# Not a CTest test (minutes); run by hand:
#   tests/reliability/soak.sh build-rel/zerodp [STEPS] [extra train flags...]
set -euo pipefail
zerodp=$1
steps=${2:-5000}
shift $(( $# >= 2 ? 2 : 1 ))
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$zerodp" train --ranks 2 --stage 3 --precision bf16 --micro-batch 2 --seq-len 32 --steps "$steps" \
  --eval-every 500 --sample-tokens 0 --log-every 500 --save "$dir/ckpt" --save-every 1000 --keep-last 2 \
  --metrics "$dir/metrics.jsonl" "$@" > "$dir/train.log" 2>&1 &
pid=$!
start=$(date +%s)
: > "$dir/rss"
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$rss" ] && echo "$(( $(date +%s) - start )) $rss" >> "$dir/rss"
  sleep 1
done
wait "$pid" || { echo "FAIL: the run failed"; tail -5 "$dir/train.log"; exit 1; }
tail -n 3 "$dir/train.log"
awk -v steps="$steps" '
  { t[NR] = $1; r[NR] = $2; if ($2 > max) max = $2 }
  END {
    if (NR < 4) { print "too few samples (" NR ")"; exit 1 }
    # The last samples are the end-of-run summary and teardown: "end" is
    # the sample at 95% of the run.
    w = int(NR / 10) + 1; h = int(NR / 2) + 1; e = int(NR * 0.95)
    printf "soak: %d steps in %d s, %d RSS samples\n", steps, t[NR], NR
    printf "RSS KiB: after warm-up (10%%) %d, at half %d, at 95%% %d, max %d\n", r[w], r[h], r[e], max
    printf "growth from half to 95%%: %+d KiB (%+.2f%%)\n", r[e] - r[h], 100.0 * (r[e] - r[h]) / r[h]
  }' "$dir/rss"
cp "$dir/rss" "${SOAK_RSS_OUT:-/dev/null}" 2>/dev/null || true
