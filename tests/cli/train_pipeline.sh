#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pipeline parallelism through the CLI (docs/pipeline.md), fp32 with
# clipping, the same 8 micro-batches per step everywhere:
# - --ranks 4 --pipeline-stages 2 (D = 2, M = 4) gives the losses of data
#   parallelism on 2 ranks (accum 4) and on 4 ranks (accum 2), under 1F1B at
#   ZeRO 1 and GPipe at ZeRO 0, and with a given cut;
# - --ranks 4 --pipeline-stages 4 (D = 1, M = 8), its last stage the head alone;
# - --init-from a consolidated checkpoint reaches every stage: the pipelined
#   run from it gives the data-parallel run's losses from it;
# - checkpoints: a pipeline's (saved at step 3 of 6) resumes as the same
#   pipeline and as data parallelism on 4 ranks at ZeRO 2, and a pipeline of
#   4 stages resumes data parallelism's, each with the losses of steps 4-6
#   of the run that never stopped;
# - mpirun -np 4 gives the thread run's losses when MPIRUN is given, and
#   its checkpoint resumes on thread ranks;
# - the summary holds each stage's ledger equal to its plan.
# usage: train_pipeline.sh ZERODP [MPIRUN]
set -euo pipefail
zerodp=$1 mpirun=${2:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
trap 'echo "FAILED (exit $?) at line $LINENO"; tail -n 15 "$dir"/*.log' ERR
common=(train --micro-batch 3 --seq-len 20 --eval-every 3 --precision fp32 --clip 0.5 --comm-timeout 120 --steps 6)
losses() { grep -o '"loss":[^,}]*' "$1"; }
same() {  # same FILE_A FILE_B WHAT
  diff <(losses "$1") <(losses "$2") > /dev/null || { echo "$3: losses differ"; diff <(losses "$1") <(losses "$2"); exit 1; }
}

"$zerodp" "${common[@]}" --ranks 2 --stage 1 --grad-accum 4 --metrics "$dir/dp2.jsonl" --save "$dir/dpck" \
  --save-every 3 > "$dir/dp2.log"
"$zerodp" "${common[@]}" --ranks 4 --stage 1 --grad-accum 2 --metrics "$dir/dp4.jsonl" > "$dir/dp4.log"
[ "$(losses "$dir/dp2.jsonl" | wc -l)" = 6 ] || { echo "expected 6 steps of metrics"; exit 1; }
same "$dir/dp2.jsonl" "$dir/dp4.jsonl" "data parallelism N=2 vs N=4"
"$zerodp" "${common[@]}" --ranks 4 --stage 1 --pipeline-stages 2 --grad-accum 4 --metrics "$dir/pp.jsonl" \
  --save "$dir/ppck" --save-every 3 > "$dir/pp.log"
same "$dir/dp2.jsonl" "$dir/pp.jsonl" "1F1B P=2 D=2 ZeRO 1 vs data parallelism"
grep -q "2 stages x 2 replicas, 1f1b, M = 4" "$dir/pp.log" || { echo "the summary does not name the pipeline"; exit 1; }
# Every stage's ledger peak equals its plan ("ledger peak X (plan X)").
if grep -E "ledger peak" "$dir/pp.log" | grep -vE "ledger peak ([0-9.]+ MiB) \(plan \1\)"; then
  echo "a stage's ledger differs from its plan"
  exit 1
fi
"$zerodp" "${common[@]}" --ranks 4 --stage 0 --pipeline-stages 2 --pipeline-schedule gpipe --pipeline-cut 1,3 \
  --grad-accum 4 --metrics "$dir/gpipe.jsonl" > "$dir/gpipe.log"
same "$dir/dp2.jsonl" "$dir/gpipe.jsonl" "GPipe P=2 D=2 ZeRO 0, cut 1,3, vs data parallelism"
"$zerodp" "${common[@]}" --ranks 4 --stage 1 --pipeline-stages 4 --grad-accum 8 --metrics "$dir/p4.jsonl" \
  > "$dir/p4.log"
same "$dir/dp2.jsonl" "$dir/p4.jsonl" "1F1B P=4 D=1 vs data parallelism"

# Checkpoints between layouts: step 3's, resumed to step 6.
tail_losses() { losses "$1" | tail -n 3; }
resumed() {  # resumed CHECKPOINT_ROOT NAME FLAGS...: the losses of steps 4-6 from step 3
  local root=$1 name=$2
  shift 2
  "$zerodp" "${common[@]}" --resume "$(ls -d "$root"/step-*3 | head -n 1)" --metrics "$dir/$name.jsonl" "$@" \
    > "$dir/$name.log"
  grep -q "resumed from" "$dir/$name.log" || { echo "$name: did not resume"; exit 1; }
  diff <(tail_losses "$dir/dp2.jsonl") <(losses "$dir/$name.jsonl") > /dev/null ||
    { echo "$name: losses after the resume differ"; diff <(tail_losses "$dir/dp2.jsonl") <(losses "$dir/$name.jsonl"); exit 1; }
}
resumed "$dir/ppck" pp_from_pp --ranks 4 --stage 1 --pipeline-stages 2
resumed "$dir/ppck" dp_from_pp --ranks 4 --stage 2
resumed "$dir/dpck" p4_from_dp --ranks 4 --stage 1 --pipeline-stages 4
grep -q "saved by 2 ranks" "$dir/dp_from_pp.log" || { echo "the pipeline's checkpoint is not of D = 2 ranks"; exit 1; }

# Starting weights through the stages (the tied embedding's copies included).
"$zerodp" "${common[@]}" --ranks 2 --stage 1 --save "$dir/ckpt" > "$dir/save.log"
"$zerodp" ckpt consolidate "$dir/ckpt" "$dir/weights" > "$dir/consolidate.log"
from=(--init-from "$dir/weights/model.safetensors")
"$zerodp" "${common[@]}" "${from[@]}" --ranks 2 --stage 1 --grad-accum 4 --metrics "$dir/dp_from.jsonl" > "$dir/dp_from.log"
"$zerodp" "${common[@]}" "${from[@]}" --ranks 4 --stage 1 --pipeline-stages 2 --grad-accum 4 \
  --metrics "$dir/pp_from.jsonl" > "$dir/pp_from.log"
same "$dir/dp_from.jsonl" "$dir/pp_from.jsonl" "--init-from: P=2 vs data parallelism"
diff <(losses "$dir/dp_from.jsonl") <(losses "$dir/dp2.jsonl") > /dev/null &&
  { echo "--init-from changed nothing: the weights did not arrive"; exit 1; }

if [ -n "$mpirun" ]; then
  "$mpirun" --oversubscribe --allow-run-as-root -np 4 "$zerodp" "${common[@]}" --backend mpi --stage 1 \
    --pipeline-stages 2 --grad-accum 4 --metrics "$dir/mpi.jsonl" --save "$dir/mpick" --save-every 3 > "$dir/mpi.log"
  same "$dir/dp2.jsonl" "$dir/mpi.jsonl" "MPI P=2 D=2 vs thread data parallelism"
  # Its checkpoint, each file written in parts by two processes, on thread ranks.
  resumed "$dir/mpick" dp_from_mpi --ranks 2 --stage 1
fi
echo "identical: pipelines of 2 and 4 stages, both schedules, ZeRO 0 and 1, checkpoints between layouts, --init-from${mpirun:+, MPI}"
