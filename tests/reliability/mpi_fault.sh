#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An MPI job where one process dies (ZERODP_FAULT action=exit: _Exit at its
# 5th collective, like a crash) or hangs (action=hang: sleeps forever) must
# end as a whole, with a clear message, within the comm timeout (5 s) plus
# start-up, never hang; so must one where a process is killed with SIGKILL
# mid-run (action=kill9, no ZERODP_FAULT). `timeout 120` is the hang detector.
# usage: mpi_fault.sh ZERODP MPIRUN exit|hang|kill9
set -uo pipefail
zerodp=$1 mpirun=$2 action=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
args=(train --backend mpi --comm-timeout 5 --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0)
if [ "$action" = kill9 ]; then
  # Long enough that it is still training when one rank is killed.
  timeout 120 "$mpirun" --oversubscribe --allow-run-as-root -np 3 "$zerodp" "${args[@]}" --steps 100000 \
    > "$dir/out.log" 2>&1 &
  launcher=$!
  victim=""
  for _ in $(seq 100); do  # wait (up to 20 s) for the ranks to start training
    sleep 0.2
    grep -q "^ranks:" "$dir/out.log" 2>/dev/null || continue
    mpirun_pid=$(pgrep -P "$launcher" -x mpirun || true)
    [ -n "$mpirun_pid" ] && victim=$(pgrep -P "$mpirun_pid" -x zerodp | sed -n 2p)
    [ -n "$victim" ] && break
  done
  [ -n "$victim" ] || { echo "FAIL: the ranks did not start"; kill "$launcher"; exit 1; }
  sleep 1
  kill -9 "$victim"
  wait "$launcher"
  rc=$?
else
  ZERODP_FAULT="rank=1,collective=5,action=$action" timeout 120 \
    "$mpirun" --oversubscribe --allow-run-as-root -x ZERODP_FAULT -np 3 "$zerodp" "${args[@]}" --steps 50 \
    > "$dir/out.log" 2>&1
  rc=$?
fi
elapsed=$(( $(date +%s) - start ))
echo "--- output (exit code $rc after ${elapsed} s) ---"
tr '\r' '\n' < "$dir/out.log" | grep -v '^.\[Kstep' | tail -n 20
echo "---"
if [ "$rc" = 124 ]; then echo "FAIL: the job hung (killed by timeout 120)"; exit 1; fi
if [ "$rc" = 0 ]; then echo "FAIL: the job succeeded although rank 1 was made to $action"; exit 1; fi
case $action in
  # mpirun reports the process that ended without MPI_Finalize.
  exit) pattern='injected exit at collective 5|exited on signal|without calling "?finalize|exit code 86' ;;
  # the peers time out naming rank 1, then MPI_Abort ends the job.
  kill9) pattern='signal 9|Killed' ;;
  hang) pattern='timed out .*rank 1|MPI_ABORT|MPI_Abort' ;;
esac
if ! grep -Eqi "$pattern" "$dir/out.log"; then echo "FAIL: no clear message matching /$pattern/"; exit 1; fi
echo "job ended: rank 1 $action -> exit code $rc after ${elapsed} s"
