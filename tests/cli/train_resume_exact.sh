#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Train 16 steps straight == train 8, save, exit, resume (at another N and
# stage), train 8: the losses of steps 9-16 and the final validation loss are
# bitwise the same (compared as round-trip text), because the resumed run
# continues from the same master weights, moments, counters and data position.
# With MPIRUN given, a second resume of the same checkpoint runs as MPI
# processes and must give the same bits too.
# usage: train_resume_exact.sh ZERODP [MPIRUN]
set -euo pipefail
zerodp=$1 mpirun=${2:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# A failing command shows where and what the runs printed (CTest keeps only this output).
trap 'echo "FAILED (exit $?) at line $LINENO"; tail -n 15 "$dir"/*.log' ERR
# A constant learning rate: the schedule's length is --steps, which differs
# between the 8-step and the 16-step runs here.
common=(train --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0 --precision fp16 --schedule constant)
# A different N changes the sums' order, so the resumed run keeps N = 2 but
# changes the stage: every stage gives the same bits.
"$zerodp" "${common[@]}" --ranks 2 --stage 3 --steps 16 --metrics "$dir/straight.jsonl" > "$dir/straight.log"
"$zerodp" "${common[@]}" --ranks 2 --stage 3 --steps 8 --save "$dir/ckpt" > "$dir/first.log"
"$zerodp" "${common[@]}" --ranks 2 --steps 16 --stage 1 --resume "$dir/ckpt" --metrics "$dir/resumed.jsonl" \
  > "$dir/resumed.log"
grep -o '"loss":[^,}]*' "$dir/straight.jsonl" | tail -n 8 > "$dir/a"
grep -o '"loss":[^,}]*' "$dir/resumed.jsonl" > "$dir/b"
[ "$(wc -l < "$dir/b")" = 8 ] || { echo "the resumed run should have logged 8 steps"; cat "$dir/resumed.log"; exit 1; }
diff "$dir/a" "$dir/b" || { echo "resumed losses differ from the straight run"; exit 1; }
diff <(grep -o "validation loss [0-9.]*" "$dir/straight.log") <(grep -o "validation loss [0-9.]*" "$dir/resumed.log") \
  || { echo "final validation loss differs"; exit 1; }
# The final line names the resume's first step as such, and the last step's loss.
grep -q "at step 9, where this run resumed; [0-9.]* at step 16)" "$dir/resumed.log" ||
  { echo "the resumed run's final line should name step 9 as where it resumed"; grep "validation loss" "$dir/resumed.log"; exit 1; }
if [ -n "$mpirun" ]; then
  "$mpirun" --oversubscribe --allow-run-as-root -np 2 "$zerodp" "${common[@]}" --backend mpi --steps 16 --stage 2 \
    --resume "$dir/ckpt" --metrics "$dir/mpi.jsonl" > "$dir/mpi.log"
  grep -o '"loss":[^,}]*' "$dir/mpi.jsonl" > "$dir/c"
  diff "$dir/a" "$dir/c" || { echo "the MPI resume differs from the straight run"; exit 1; }
fi
echo "identical after resume: $(tr '\n' ' ' < "$dir/b")"
