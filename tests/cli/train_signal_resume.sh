#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Preemption: SIGTERM in the middle of a run makes every rank finish its
# step, save and exit with 143; `zerodp train --resume DIR` (nothing else:
# the checkpoint brings the run's settings) then ends bitwise equal to an
# uninterrupted run (consolidated safetensors compared with cmp). On thread
# ranks, and under mpirun (the signal goes to the rank processes, as a
# scheduler's does). A second signal exits at once and leaves the last
# complete checkpoint intact. Mode mpirun signals mpirun itself instead: it
# forwards SIGTERM to the ranks, which save as above, and then exits with 1
# (Open MPI's own code for a job it was told to end), not the ranks' 143.
# Mode pipeline: 4 thread ranks in 2 pipeline stages (ZeRO 1) save the
# checkpoint of their 2 replicas, and the command the run prints, run as
# printed, ends equal to 2-rank data parallelism's uninterrupted run.
# usage: train_signal_resume.sh ZERODP thread|mpi|mpirun|twice|pipeline [MPIRUN]
set -euo pipefail
zerodp=$1 mode=$2 mpirun=${3:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# mpirun passes a signal on only after about a second: that run is longer.
steps=120
[ "$mode" = mpirun ] && steps=600
stage=2
[ "$mode" = pipeline ] && stage=1
common=(train --stage "$stage" --precision bf16 --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0
        --held-out 0 --steps "$steps" --seed 7 --comm-timeout 60)
launch=("$zerodp")
ranks=(--ranks 2)
[ "$mode" = pipeline ] && ranks=(--ranks 4 --pipeline-stages 2)
expected_code=143
[ "$mode" = mpirun ] && expected_code=1
if [ "$mode" = mpi ] || [ "$mode" = mpirun ]; then
  launch=("$mpirun" --oversubscribe --allow-run-as-root -np 2 "$zerodp")
  ranks=()
fi

# Wait until the run has logged step $1 (it logs every step).
wait_for_step() {
  for _ in $(seq 1 1200); do
    grep -q "^step *$1/" "$dir/run.log" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
# The processes that train: the ranks under mpirun, else the one process.
# Mode mpirun: mpirun itself, which forwards the signal.
trainers() { if [ "$mode" = mpi ]; then pgrep -P "$pid" || true; else echo "$pid"; fi; }

if [ "$mode" = twice ]; then
  "${launch[@]}" "${common[@]}" "${ranks[@]}" --save "$dir/run" --save-every 5 --log-every 1 > "$dir/run.log" 2>&1 &
  pid=$!
  wait_for_step 12 || { cat "$dir/run.log"; echo "the run did not reach step 12"; exit 1; }
  # Apart: two pending SIGTERMs would merge into one.
  kill -TERM $(trainers); sleep 0.2; kill -TERM $(trainers) 2>/dev/null || true
  set +e; wait "$pid"; code=$?; set -e
  [ "$code" = 143 ] || { cat "$dir/run.log"; echo "exit code $code, expected 143"; exit 1; }
  "$zerodp" ckpt inspect "$dir/run" > /dev/null || { echo "the last complete checkpoint was damaged"; exit 1; }
  if ! grep -q "second signal: exiting now" "$dir/run.log"; then
    # The first signal's save may have finished within the 0.2 s: then the run ended by itself.
    grep -q "interrupted by SIGTERM" "$dir/run.log" || { cat "$dir/run.log"; echo "neither stop was seen"; exit 1; }
  fi
  echo "second signal: exited at once, checkpoint intact"
  exit 0
fi

"$zerodp" "${common[@]}" --ranks 2 --save "$dir/straight" > "$dir/straight.log"
"${launch[@]}" "${common[@]}" "${ranks[@]}" --save "$dir/run" --log-every 1 > "$dir/run.log" 2>&1 &
pid=$!
wait_for_step 20 || { cat "$dir/run.log"; echo "the run did not reach step 20"; exit 1; }
kill -TERM $(trainers)
set +e; wait "$pid"; code=$?; set -e
[ "$code" = "$expected_code" ] || { tail -5 "$dir/run.log"; echo "exit code $code, expected $expected_code"; exit 1; }
grep -q "interrupted by SIGTERM after step" "$dir/run.log" || { tail -5 "$dir/run.log"; echo "no interruption"; exit 1; }
grep -q "zerodp train --resume $dir/run" "$dir/run.log" || { tail -5 "$dir/run.log"; echo "no resume hint"; exit 1; }
# Under mpirun the hint starts with the launcher: run as printed, it resumes on MPI ranks.
if [ "$mode" = mpi ] || [ "$mode" = mpirun ]; then
  grep -q "^  mpirun -np 2 zerodp train --resume $dir/run" "$dir/run.log" \
    || { tail -5 "$dir/run.log"; echo "the resume hint does not name mpirun -np 2"; exit 1; }
fi
latest=$(cat "$dir/run/latest")
[ "$latest" != "$(printf step-%08d "$steps")" ] || { echo "the run finished before the signal: nothing was tested"; exit 1; }
echo "stopped at $latest"

if [ "$mode" = pipeline ]; then
  # The printed command, as printed (the stage and the pipeline's layout in it).
  read -ra printed <<< "$(grep -A1 "Continue the run with:" "$dir/run.log" | tail -n 1)"
  [ "${printed[0]}" = zerodp ] || { tail -3 "$dir/run.log"; echo "no command to run"; exit 1; }
  "$zerodp" "${printed[@]:1}" > "$dir/resumed.log"
else
  "${launch[@]}" train --resume "$dir/run" --save "$dir/run" "${ranks[@]}" > "$dir/resumed.log"
fi
grep -q "resumed from" "$dir/resumed.log" || { cat "$dir/resumed.log"; echo "did not resume"; exit 1; }
"$zerodp" ckpt consolidate "$dir/straight" "$dir/out_straight" > /dev/null
"$zerodp" ckpt consolidate "$dir/run" "$dir/out_run" > /dev/null
cmp "$dir/out_straight/model.safetensors" "$dir/out_run/model.safetensors" \
  || { echo "final weights differ after SIGTERM and resume ($mode)"; exit 1; }
echo "identical final weights after SIGTERM and resume ($mode)"
