#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `zerodp train --offload-optimizer DIR --offload-params DIR2` gives bitwise
# the losses of the same run with the states and parameters in RAM, on threads and (with MPIRUN) across processes;
# it saves a checkpoint from the disk's copy that resumes the in-RAM run
# with the same losses; and it leaves nothing in DIR or DIR2. DIR lies in the
# working directory (a RAM file system is refused, and /tmp may be one).
# usage: train_offload_equal.sh ZERODP [MPIRUN]
set -euo pipefail
zerodp=$1 mpirun=${2:-}
dir=$(mktemp -d "$PWD/offload_equal.XXXXXX")
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/states" "$dir/params"
common=(train --stage 3 --precision bf16 --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0
        --held-out 0 --comm-timeout 60)
loss() { grep -o '"loss":[^,}]*' "$1"; }
"$zerodp" "${common[@]}" --steps 6 --ranks 2 --metrics "$dir/ram.jsonl" > /dev/null
"$zerodp" "${common[@]}" --steps 6 --ranks 2 --metrics "$dir/disk.jsonl" --offload-optimizer "$dir/states" \
  --offload-params "$dir/params" --save "$dir/ckpt" --save-every 3 > "$dir/disk.log"
grep -q "offload-optimizer $dir/states" "$dir/disk.log" || { echo "the run did not offload"; exit 1; }
grep -q "offload-params $dir/params" "$dir/disk.log" || { echo "the run did not offload its parameters"; exit 1; }
diff <(loss "$dir/ram.jsonl") <(loss "$dir/disk.jsonl") || { echo "offloaded losses differ"; exit 1; }
# The checkpoint of step 3, saved from the disk's copy, resumed in RAM.
"$zerodp" "${common[@]}" --steps 6 --ranks 2 --metrics "$dir/resumed.jsonl" --resume "$dir/ckpt/step-00000003" > /dev/null
diff <(loss "$dir/disk.jsonl" | tail -3) <(loss "$dir/resumed.jsonl" | tail -3) ||
  { echo "the offloaded run's checkpoint resumes differently"; exit 1; }
if [ -n "$mpirun" ]; then
  "$mpirun" --oversubscribe --allow-run-as-root -np 2 "$zerodp" "${common[@]}" --steps 6 --backend mpi \
    --metrics "$dir/mpi.jsonl" --offload-optimizer "$dir/states" --offload-params "$dir/params" > /dev/null
  diff <(loss "$dir/ram.jsonl") <(loss "$dir/mpi.jsonl") || { echo "offloaded MPI losses differ"; exit 1; }
fi
for d in states params; do
  [ -z "$(ls -A "$dir/$d")" ] || { echo "files left in the offload directory: $(ls "$dir/$d")"; exit 1; }
done
echo "identical: $(loss "$dir/disk.jsonl" | tr '\n' ' ')"
