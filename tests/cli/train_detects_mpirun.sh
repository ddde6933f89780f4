#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `mpirun -np 2 zerodp train` without --backend trains one job on the MPI
# backend (it used to run two independent thread jobs), and says so; an
# explicit --backend thread under mpirun is refused with exit code 2.
# Slurm's srun is detected from its step's environment (set here as srun -n 2
# sets it): a task that MPI does not join to the other (an MPI library
# without the cluster's PMI) is refused before any work instead of training
# its own copy, and --backend thread is refused naming srun.
# usage: train_detects_mpirun.sh ZERODP MPIRUN
set -euo pipefail
zerodp=$1 mpirun=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
quick=(train --steps 2 --micro-batch 2 --eval-every 0 --sample-tokens 0 --held-out 0 --comm-timeout 60)
"$mpirun" --oversubscribe --allow-run-as-root -np 2 "$zerodp" "${quick[@]}" > "$dir/out" 2>&1
[ "$(grep -c '^ranks: 2 (mpi)' "$dir/out")" = 1 ] || { cat "$dir/out"; echo "expected one MPI job of 2 ranks"; exit 1; }
grep -q 'detected: started by mpirun -np 2' "$dir/out" || { cat "$dir/out"; echo "the detection is not named"; exit 1; }
set +e
"$mpirun" --oversubscribe --allow-run-as-root -np 2 "$zerodp" "${quick[@]}" --backend thread > "$dir/thread" 2>&1
code=$?
set -e
grep -q -- '--backend thread under mpirun -np 2' "$dir/thread" || { cat "$dir/thread"; echo "no refusal"; exit 1; }
[ "$code" != 0 ] || { echo "exit code 0 for a refused run"; exit 1; }

slurm=(env -u OMPI_COMM_WORLD_SIZE SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=0 SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=2)
set +e
"${slurm[@]}" "$zerodp" "${quick[@]}" --save "$dir/srun" > "$dir/srun.out" 2>&1
code=$?
set -e
grep -q 'srun -n 2 started 2 processes, but MPI made this one a job of 1' "$dir/srun.out" \
  || { cat "$dir/srun.out"; echo "an unjoined srun task was not refused"; exit 1; }
[ "$code" = 2 ] || { echo "exit code $code for the unjoined srun task, expected 2"; exit 1; }
[ ! -e "$dir/srun/latest" ] || { echo "the refused task saved a checkpoint"; exit 1; }
set +e
"${slurm[@]}" "$zerodp" "${quick[@]}" --backend thread > "$dir/srun_thread" 2>&1
code=$?
set -e
grep -q -- '--backend thread under srun -n 2' "$dir/srun_thread" || { cat "$dir/srun_thread"; echo "no srun refusal"; exit 1; }
[ "$code" = 2 ] || { echo "exit code $code for --backend thread under srun, expected 2"; exit 1; }
echo "mpirun detected"
