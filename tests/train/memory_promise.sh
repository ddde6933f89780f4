#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The ZeRO memory promise, measured: for each model, stage and rank count,
# `zerodp train` (thread ranks, one process) ends with its measured peak
# resident set (VmHWM) and the plan (the baseline measured at start-up plus
# every rank's predicted ledger peak and allocator rounding). The measured
# peak must not exceed the plan, and the plan must not overestimate it by
# more than 10%. Prints one markdown row per run.
# usage: memory_promise.sh ZERODP "MODELS" "STAGES" "RANKS" [extra train flags...]
# MICRO_BATCH and SEQ_LEN set the micro-batch shape (default 2 x 64);
# EVAL_EVERY (default 0) evaluates every that many steps, and with
# --held-out answers the sums there, rank 0 gathering its consolidated copy
# while the other rank threads still hold their training memory: the
# plan's end moment (docs/memory.md). At the run's end those threads may
# have left first, and the plan, which cannot count on it, is then up to
# the copy (4 bytes a parameter) over the measurement.
set -euo pipefail
zerodp=$1 models=$2 stages=$3 ranks=$4
shift 4
failed=0
echo "| model | stage | ranks | measured peak (MiB) | plan (MiB) | baseline (MiB) | plan vs measured |"
echo "|---|---|---|---|---|---|---|"
for model in $models; do
  for stage in $stages; do
    for n in $ranks; do
      rc=0
      out=$("$zerodp" train --model "$model" --stage "$stage" --ranks "$n" --precision bf16 --steps 2 \
              --micro-batch "${MICRO_BATCH:-2}" --seq-len "${SEQ_LEN:-64}" --eval-every "${EVAL_EVERY:-0}" --eval-batches 1 "$@" 2>&1) || rc=$?
      # A machine too small for a configuration refuses it up front (exit 2,
      # the preflight against its memory): nothing to measure there.
      if [ "$rc" = 2 ] && grep -q "over this machine's memory" <<< "$out"; then
        echo "| $model | $stage | $n | - | - | - | skipped: more than this machine's memory |"
        continue
      fi
      [ "$rc" = 0 ] || { echo "$model stage $stage N=$n failed (exit $rc):"; echo "$out" | tail -n 5; exit 1; }
      line=$(grep '^Process memory' <<< "$out") || { echo "no process memory line:"; echo "$out" | tail; exit 1; }
      measured=$(sed -E 's/.*peak resident ([0-9.]+) MiB measured.*/\1/' <<< "$line")
      plan=$(sed -E 's/.*the plan ([0-9.]+) MiB =.*/\1/' <<< "$line")
      baseline=$(sed -E 's/.* = baseline ([0-9.]+) MiB.*/\1/' <<< "$line")
      verdict=$(awk -v m="$measured" -v p="$plan" 'BEGIN {
        r = 100 * (p / m - 1); printf "%+.1f%%", r;
        if (m > p) printf " OVER THE PLAN"; else if (p > 1.1 * m) printf " OVERESTIMATE > 10%%" }')
      echo "| $model | $stage | $n | $measured | $plan | $baseline | $verdict |"
      case $verdict in *OVER*) failed=1 ;; esac
    done
  done
done
[ "$failed" = 0 ] && echo "memory promise kept" || { echo "memory promise broken"; exit 1; }
