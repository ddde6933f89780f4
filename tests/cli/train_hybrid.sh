#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hybrid sharding through the CLI (docs/scale.md "Hybrid sharding"), fp32
# without clipping, where a power-of-two --shard-group-size sums in the flat
# run's order:
# - --ranks 4 --shard-group-size 2 gives the flat --ranks 4 run's losses bitwise
#   (stages 2 and 3), and so does mpirun -np 4 when MPIRUN is given;
# - a hybrid checkpoint holds each shard once (2 shard files, not 4), resumes
#   bitwise as hybrid, loads into a flat run (reshards 2 -> 4 ranks) bitwise,
#   and a flat checkpoint resumes as hybrid (4 -> 2) bitwise; `zerodp ckpt
#   reshard` takes the hybrid checkpoint to 4 ranks and the flat one back to 2.
# usage: train_hybrid.sh ZERODP [MPIRUN]
set -euo pipefail
zerodp=$1 mpirun=${2:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
trap 'echo "FAILED (exit $?) at line $LINENO"; tail -n 15 "$dir"/*.log' ERR
common=(train --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0 --precision fp32 --schedule constant
        --clip 0 --comm-timeout 120)
losses() { grep -o '"loss":[^,}]*' "$1"; }
same() {  # same FILE_A FILE_B WHAT
  diff <(losses "$1") <(losses "$2") > /dev/null || { echo "$3: losses differ"; diff <(losses "$1") <(losses "$2"); exit 1; }
}

"$zerodp" "${common[@]}" --ranks 4 --stage 2 --steps 8 --metrics "$dir/flat.jsonl" > "$dir/flat.log"
"$zerodp" "${common[@]}" --ranks 4 --stage 2 --steps 8 --shard-group-size 2 --metrics "$dir/hybrid.jsonl" \
  > "$dir/hybrid.log"
[ "$(losses "$dir/flat.jsonl" | wc -l)" = 8 ] || { echo "expected 8 steps of metrics"; exit 1; }
same "$dir/flat.jsonl" "$dir/hybrid.jsonl" "stage 2 hybrid G=2 vs flat, N=4"
grep -q "hybrid sharding: 2 groups of 2 ranks" "$dir/hybrid.log" || { echo "the summary does not say hybrid"; exit 1; }
"$zerodp" "${common[@]}" --ranks 4 --stage 3 --steps 8 --shard-group-size 2 --metrics "$dir/hybrid3.jsonl" \
  > "$dir/hybrid3.log"
same "$dir/flat.jsonl" "$dir/hybrid3.jsonl" "stage 3 hybrid G=2 vs flat stage 2, N=4"

# Checkpoints: hybrid save at step 4, then every continuation equals the straight run's steps 5-8.
tail -n 4 <(losses "$dir/flat.jsonl") > "$dir/last4"
cont() {  # cont NAME ARGS...: steps 5-8 from a checkpoint, compared with the straight run
  local name=$1
  shift
  "$zerodp" "${common[@]}" --ranks 4 --steps 8 "$@" --metrics "$dir/$name.jsonl" > "$dir/$name.log"
  diff "$dir/last4" <(losses "$dir/$name.jsonl") || { echo "$name: resumed losses differ"; exit 1; }
}
"$zerodp" "${common[@]}" --ranks 4 --stage 3 --steps 4 --shard-group-size 2 --save "$dir/hckpt" > "$dir/hsave.log"
shards=$(find "$dir/hckpt" -name 'shard-*.bin' | wc -l)
[ "$shards" = 2 ] || { echo "the hybrid checkpoint has $shards shard files, expected 2 (one per shard)"; exit 1; }
cont hybrid_resume --stage 3 --shard-group-size 2 --resume "$dir/hckpt"
cont hybrid_to_flat --stage 2 --resume "$dir/hckpt"
"$zerodp" "${common[@]}" --ranks 4 --stage 2 --steps 4 --save "$dir/fckpt" > "$dir/fsave.log"
cont flat_to_hybrid --stage 1 --shard-group-size 2 --resume "$dir/fckpt"
# The offline tool: hybrid (2 shards) -> 4, and back to 2, still the same run.
"$zerodp" ckpt reshard "$dir/hckpt" "$dir/h4" --ranks 4 > "$dir/reshard4.log"
"$zerodp" ckpt reshard "$dir/h4" "$dir/h2" --ranks 2 > "$dir/reshard2.log"
cont resharded_flat --stage 2 --resume "$dir/h4"
cont resharded_back --stage 3 --shard-group-size 2 --resume "$dir/h2"

if [ -n "$mpirun" ]; then
  "$mpirun" --oversubscribe --allow-run-as-root -np 4 "$zerodp" "${common[@]}" --backend mpi --stage 2 --steps 8 \
    --shard-group-size 2 --metrics "$dir/mpi.jsonl" > "$dir/mpi.log"
  same "$dir/flat.jsonl" "$dir/mpi.jsonl" "MPI hybrid G=2 vs thread flat, N=4"
fi
echo "identical: $(losses "$dir/flat.jsonl" | tr '\n' ' ')"
