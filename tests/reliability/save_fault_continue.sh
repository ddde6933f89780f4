#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --on-save-failure continue against a write error at every point of a save
# (ZERODP_FAULT save=2,point=P,action=throw, on a rank that reaches P): the
# failure is reported with its cause, the run trains on, the next saves
# succeed, no step-N.tmp is left, and the run ends (exit code 0) with final
# weights bitwise equal to an uninterrupted run's. With --shard-group-size 1
# too (hybrid sharding: group 0 writes, the other groups learn of the
# failure through the size's collective).
# usage: save_fault_continue.sh ZERODP
set -euo pipefail
zerodp=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
common=(train --ranks 2 --stage 3 --precision bf16 --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0
        --held-out 0 --steps 16 --seed 11 --comm-timeout 10 --checkpoint-timeout 10)
"$zerodp" "${common[@]}" --save "$dir/straight" > /dev/null
"$zerodp" ckpt consolidate "$dir/straight" "$dir/out_straight" > /dev/null

check() {  # check NAME POINT RANK [FLAGS...]: one faulty run and its checks
  local name=$1 point=$2 rank=$3
  shift 3
  local code=0
  ZERODP_FAULT="rank=$rank,save=2,point=$point,action=throw" timeout 120 \
    "$zerodp" "${common[@]}" "$@" --save "$dir/$name" --save-every 4 --on-save-failure continue \
    > "$dir/$name.log" 2>&1 || code=$?
  [ "$code" = 0 ] || { tail -5 "$dir/$name.log"; echo "$name: exit code $code, expected 0"; exit 1; }
  grep -q "saving step 8 under $dir/$name failed (.*); no partial checkpoint is left. Training on" "$dir/$name.log" \
    || { cat "$dir/$name.log"; echo "$name: the failure was not reported"; exit 1; }
  grep -q "injected failure at save 2 ($point)" "$dir/$name.log" \
    || { cat "$dir/$name.log"; echo "$name: the cause is not named"; exit 1; }
  if ls -d "$dir/$name"/*.tmp 2> /dev/null; then echo "$name: a partial directory is left"; exit 1; fi
  [ "$(cat "$dir/$name/latest")" = step-00000016 ] || { echo "$name: latest is not the final step"; exit 1; }
  "$zerodp" ckpt consolidate "$dir/$name" "$dir/out_$name" > /dev/null
  cmp "$dir/out_straight/model.safetensors" "$dir/out_$name/model.safetensors" \
    || { echo "$name: final weights differ"; exit 1; }
}

for point in begin shard-partial shard-written manifest-written dir-renamed latest-written; do
  case $point in
    begin | shard-partial | shard-written) rank=1 ;;
    *) rank=0 ;;
  esac
  check "$point" "$point" "$rank"
done
check hybrid shard-written 0 --shard-group-size 1
echo "every save point: the failed save was reported, the run trained on; identical final weights"
