#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Kill -9 a training run at a random point after its first checkpoint,
# resume from the last complete checkpoint, and the final weights equal an
# uninterrupted run's bit for bit (consolidated safetensors compared with cmp).
# usage: train_crash_resume.sh ZERODP
set -euo pipefail
zerodp=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
common=(train --ranks 2 --stage 2 --precision bf16 --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0
        --steps 150 --seed 7)
"$zerodp" "${common[@]}" --save "$dir/straight" > "$dir/straight.log"

"$zerodp" "${common[@]}" --save "$dir/crashed" --save-every 4 --keep-last 2 > "$dir/crashed.log" 2>&1 &
pid=$!
# Wait for a first complete checkpoint, then kill at a random moment.
for _ in $(seq 1 600); do
  [ -f "$dir/crashed/latest" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
sleep "0.$(( RANDOM % 10 ))"
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
[ -f "$dir/crashed/latest" ] || { echo "no checkpoint was written before the kill"; cat "$dir/crashed.log"; exit 1; }
latest=$(cat "$dir/crashed/latest")
echo "killed after $latest"
[ "$latest" != "step-00000150" ] || { echo "the run finished before the kill: nothing was tested"; exit 1; }

"$zerodp" "${common[@]}" --resume "$dir/crashed" --save "$dir/crashed" > "$dir/resumed.log"
grep -q "resumed from" "$dir/resumed.log" || { echo "did not resume"; cat "$dir/resumed.log"; exit 1; }
"$zerodp" ckpt consolidate "$dir/straight" "$dir/out_straight" > /dev/null
"$zerodp" ckpt consolidate "$dir/crashed" "$dir/out_crashed" > /dev/null
cmp "$dir/out_straight/model.safetensors" "$dir/out_crashed/model.safetensors" \
  || { echo "final weights differ after the crash and resume"; exit 1; }
echo "identical final weights after kill -9 and resume"
