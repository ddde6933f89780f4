#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Settings a checkpoint records survive a resume: 12 steps straight with
# FLAGS == 6 steps with FLAGS, save, exit, resume WITHOUT them for 6 more:
# the resumed run's effective config shows EXPECT, and the losses of steps
# 7-12 and the final validation loss are bitwise the same. With MPIRUN
# given (not "-"), the same resume on MPI processes gives the same bits too.
# A run without FLAGS must differ (the flags did something).
# usage: train_resume_keeps_flags.sh ZERODP MPIRUN|- EXPECT FLAGS...
#   e.g. ... "quantize-weights int8" --quantize-weights --quantize-grads
set -euo pipefail
zerodp=$1 mpirun=$2 expect=$3
shift 3
[ "$mpirun" = - ] && mpirun=""
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
trap 'echo "FAILED (exit $?) at line $LINENO"; tail -n 15 "$dir"/*.log' ERR
common=(train --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0 --precision bf16 --schedule constant
        --stage 3)
q=("$@")
"$zerodp" "${common[@]}" --ranks 2 "${q[@]}" --steps 12 --metrics "$dir/straight.jsonl" > "$dir/straight.log"
"$zerodp" "${common[@]}" --ranks 2 --steps 12 --metrics "$dir/plain.jsonl" > "$dir/plain.log"
"$zerodp" "${common[@]}" --ranks 2 "${q[@]}" --steps 6 --save "$dir/ckpt" > "$dir/first.log"
"$zerodp" "${common[@]}" --ranks 2 --steps 12 --resume "$dir/ckpt" --metrics "$dir/resumed.jsonl" > "$dir/resumed.log"
grep -q "$expect" "$dir/resumed.log" || { echo "the resume did not keep $expect"; exit 1; }
grep -o '"loss":[^,}]*' "$dir/straight.jsonl" | tail -n 6 > "$dir/a"
grep -o '"loss":[^,}]*' "$dir/resumed.jsonl" > "$dir/b"
grep -o '"loss":[^,}]*' "$dir/plain.jsonl" | tail -n 6 > "$dir/p"
[ "$(wc -l < "$dir/b")" = 6 ] || { echo "the resumed run should have logged 6 steps"; exit 1; }
diff "$dir/a" "$dir/b" || { echo "resumed losses differ from the straight run"; exit 1; }
if diff -q "$dir/a" "$dir/p" > /dev/null; then echo "the run with $* gave the plain run's losses"; exit 1; fi
diff <(grep -o "validation loss [0-9.]*" "$dir/straight.log") <(grep -o "validation loss [0-9.]*" "$dir/resumed.log") \
  || { echo "final validation loss differs"; exit 1; }
if [ -n "$mpirun" ]; then
  "$mpirun" --oversubscribe --allow-run-as-root -np 2 "$zerodp" "${common[@]}" --backend mpi --steps 12 \
    --resume "$dir/ckpt" --metrics "$dir/mpi.jsonl" > "$dir/mpi.log"
  grep -o '"loss":[^,}]*' "$dir/mpi.jsonl" > "$dir/c"
  diff "$dir/a" "$dir/c" || { echo "the MPI resume differs from the straight run"; exit 1; }
fi
echo "identical after resume: $(tr '\n' ' ' < "$dir/b")"
