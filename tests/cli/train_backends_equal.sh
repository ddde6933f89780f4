#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `mpirun -np N zerodp train --backend mpi` and `zerodp train --ranks N` (threads)
# must give bitwise the same losses: the metrics files' loss fields are compared
# as text (they are printed with round-trip precision).
# usage: train_backends_equal.sh ZERODP MPIRUN STAGE PRECISION [TRAIN FLAGS...]
# (the extra flags, e.g. --optimizer lion --lr 3e-4, go to both runs)
set -euo pipefail
zerodp=$1 mpirun=$2 stage=$3 precision=$4
shift 4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
common=(train --steps 6 --stage "$stage" --precision "$precision" --micro-batch 2 --seq-len 32
        --eval-every 0 --sample-tokens 0 --comm-timeout 60 "$@")
"$zerodp" "${common[@]}" --ranks 3 --metrics "$dir/thread.jsonl" > "$dir/thread.log"
"$mpirun" --oversubscribe --allow-run-as-root -np 3 "$zerodp" "${common[@]}" --backend mpi \
  --metrics "$dir/mpi.jsonl" > "$dir/mpi.log"
grep -o '"loss":[^,}]*' "$dir/thread.jsonl" > "$dir/thread.loss"
grep -o '"loss":[^,}]*' "$dir/mpi.jsonl" > "$dir/mpi.loss"
[ "$(wc -l < "$dir/thread.loss")" = 6 ] || { echo "expected 6 steps of metrics"; exit 1; }
if ! diff "$dir/thread.loss" "$dir/mpi.loss"; then
  echo "thread and MPI backends differ (stage $stage, $precision${*:+, $*})"
  exit 1
fi
grep -o "validation loss [0-9.]*" "$dir/thread.log" > "$dir/thread.val"
grep -o "validation loss [0-9.]*" "$dir/mpi.log" > "$dir/mpi.val"
diff "$dir/thread.val" "$dir/mpi.val"
echo "identical: $(tr '\n' ' ' < "$dir/thread.loss")"
