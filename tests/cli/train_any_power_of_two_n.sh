#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The global batch fixed at 8 micro-batches of 2 sequences: 1 rank x 8
# micro-batches, 2 x 4, 4 x 2 and 8 x 1 (threads), and 2 MPI processes x 4
# when MPIRUN is given, train to bitwise the same losses and consolidated
# weights (fp32, no clipping: zero/engine.h says why). A run saved at N = 2
# and resumed at N = 4 (which keeps the saved global batch: grad-accum 2)
# ends with the straight N = 4 run's weights, and so does one resumed from
# that checkpoint resharded offline to 4 ranks. ZERODP_EXTRA_FLAGS (e.g.
# "--optimizer adam8bit") go to every run; ZERODP_SEQ_LEN replaces the
# sequence length 16.
# usage: train_any_power_of_two_n.sh ZERODP STAGE [MPIRUN]
set -euo pipefail
zerodp=$1 stage=$2 mpirun=${3:-}
read -r -a extra <<< "${ZERODP_EXTRA_FLAGS:-}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
trap 'echo "FAILED (exit $?) at line $LINENO"; tail -n 15 "$dir"/*.log' ERR
common=(train --micro-batch 2 --seq-len "${ZERODP_SEQ_LEN:-16}" --stage "$stage" --precision fp32 --clip 0 --schedule constant
        --eval-every 0 --sample-tokens 0 --held-out 0 --comm-timeout 60 "${extra[@]}")
weights() { "$zerodp" ckpt consolidate "$1" "$1.out" > /dev/null && cmp -s "$1.out/model.safetensors" "$2"; }
for n in 1 2 4 8; do
  "$zerodp" "${common[@]}" --ranks "$n" --grad-accum $((8 / n)) --steps 6 --metrics "$dir/n$n.jsonl" \
    --save "$dir/n$n" > "$dir/n$n.log"
  grep -o '"loss":[^,}]*' "$dir/n$n.jsonl" > "$dir/n$n.loss"
done
"$zerodp" ckpt consolidate "$dir/n1" "$dir/n1.out" > /dev/null
for n in 2 4 8; do
  diff "$dir/n1.loss" "$dir/n$n.loss" || { echo "$n ranks x $((8 / n)) differ from 1 x 8 (stage $stage)"; exit 1; }
  weights "$dir/n$n" "$dir/n1.out/model.safetensors" || { echo "the weights of $n ranks differ"; exit 1; }
done
if [ -n "$mpirun" ]; then
  "$mpirun" --oversubscribe --allow-run-as-root -np 2 "$zerodp" "${common[@]}" --backend mpi --grad-accum 4 \
    --steps 6 --metrics "$dir/mpi.jsonl" --save "$dir/mpi" > "$dir/mpi.log"
  grep -o '"loss":[^,}]*' "$dir/mpi.jsonl" > "$dir/mpi.loss"
  diff "$dir/n1.loss" "$dir/mpi.loss" || { echo "2 MPI processes x 4 differ from 1 x 8 (stage $stage)"; exit 1; }
  weights "$dir/mpi" "$dir/n1.out/model.safetensors" || { echo "the MPI run's weights differ"; exit 1; }
fi
"$zerodp" "${common[@]}" --ranks 2 --grad-accum 4 --steps 3 --save "$dir/half" > "$dir/half.log"
"$zerodp" "${common[@]}" --ranks 4 --steps 6 --resume "$dir/half" --save "$dir/resumed" > "$dir/resumed.log"
grep -q "grad-accum 2 (the checkpoint's 8 micro-batches per step over 4 ranks)" "$dir/resumed.log"
weights "$dir/resumed" "$dir/n1.out/model.safetensors" || { echo "the resume at N = 4 differs"; exit 1; }
"$zerodp" ckpt reshard "$dir/half" --ranks 4 --stage "$stage" "$dir/half4" > /dev/null
"$zerodp" "${common[@]}" --ranks 4 --steps 6 --resume "$dir/half4" --save "$dir/resharded" > "$dir/resharded.log"
weights "$dir/resharded" "$dir/n1.out/model.safetensors" || { echo "the resume of the resharded one differs"; exit 1; }
echo "identical at every N: $(tr '\n' ' ' < "$dir/n1.loss")"
