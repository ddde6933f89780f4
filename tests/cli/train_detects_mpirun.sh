#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `mpirun -np 2 zerodp train` without --backend trains one job on the MPI
# backend (it used to run two independent thread jobs), and says so; an
# explicit --backend thread under mpirun is refused with exit code 2.
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
echo "mpirun detected"
