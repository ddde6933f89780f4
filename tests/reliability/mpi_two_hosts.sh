#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The MPI backend across two hosts: two network namespaces joined by a veth
# pair (192.0.2.0/24, TEST-NET-1, exists only inside them), each with its own
# host name; mpirun runs on host a and starts host b's daemon through
# netns_rsh.sh, as it would through ssh. Ranks on one host talk through shared
# memory (vader), across hosts through TCP over the veth link.
#
#   same-bits: `zerodp train` with 2 ranks on each host gives bitwise the same
#              losses and validation loss as 4 thread ranks in one process, for
#              two stage/precision pairs, and the bytes really crossed the link.
#   cut-link:  one rank per host; the link is cut mid-run. Both ranks must end
#              with an error naming the peer they waited for within the comm
#              timeout (3 s) plus slack, and the whole job (mpirun and host b's
#              daemon) must end too: never a hang.
#
# The bed is two_host_bed.sh's. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN)
# and iproute2; without them it exits 77, which CTest reports as skipped,
# with the reason.
# usage: mpi_two_hosts.sh ZERODP MPIRUN same-bits|cut-link
set -uo pipefail
zerodp=$1 mode=$3
export BED_MPIRUN=$2  # read by two_host_bed.sh
# shellcheck source=two_host_bed.sh
. "$(dirname "$0")/two_host_bed.sh"
dir=$BED_DIR ns_a=$BED_NS_A ns_b=$BED_NS_B host_a=$BED_HOST_A host_b=$BED_HOST_B addr_b=$BED_ADDR_B
bed_up
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
common=(train --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0)

same_bits() {
  local stage=$1 precision=$2
  local run=(--steps 6 --stage "$stage" --precision "$precision" --comm-timeout 60)
  "$zerodp" "${common[@]}" "${run[@]}" --ranks 4 --metrics "$dir/thread.jsonl" > "$dir/thread.log" ||
    fail "the thread run failed"
  local before; before=$(bed_tx_bytes a)
  BED_TIMEOUT=240 bed_mpirun 4 2 --display-map "$zerodp" "${common[@]}" \
    "${run[@]}" --backend mpi --metrics "$dir/mpi.jsonl" > "$dir/mpi.log" 2>&1 ||
    { cat "$dir/mpi.log"; fail "the two-host run failed"; }
  local crossed=$(( $(bed_tx_bytes a) - before ))
  grep -o '"loss":[^,}]*' "$dir/thread.jsonl" > "$dir/thread.loss"
  grep -o '"loss":[^,}]*' "$dir/mpi.jsonl" > "$dir/mpi.loss"
  [ "$(wc -l < "$dir/thread.loss")" = 6 ] || fail "expected 6 steps of metrics"
  diff "$dir/thread.loss" "$dir/mpi.loss" || fail "two hosts differ from one process (stage $stage, $precision)"
  diff <(grep -o "validation loss [0-9.]*" "$dir/thread.log") <(grep -o "validation loss [0-9.]*" "$dir/mpi.log") ||
    fail "validation loss differs"
  # mpirun's map: two ranks on each host (host b is named by its address).
  grep -q "node: $host_a.*Num procs: 2" "$dir/mpi.log" && grep -q "node: $addr_b.*Num procs: 2" "$dir/mpi.log" ||
    { cat "$dir/mpi.log"; fail "the ranks were not placed two on each host"; }
  # Stage 3 with 4 ranks sends 3Φ(N-1)/N elements per rank and step; at least
  # the parameters (Φ = 842,496, 2 bytes in bf16) must have crossed once.
  [ "$crossed" -gt 1700000 ] || fail "only $crossed bytes crossed the link"
  echo "stage $stage $precision: identical on 2 hosts x 2 ranks and 4 threads," \
       "$crossed bytes from $host_a to $host_b: $(tr '\n' ' ' < "$dir/thread.loss")"
}

cut_link() {
  local timeout_s=3
  BED_TIMEOUT=300 bed_mpirun 2 1 --output-filename "$dir/out" "$zerodp" "${common[@]}" \
    --steps 1000000 --stage 3 --precision bf16 --comm-timeout "$timeout_s" --backend mpi \
    --metrics "$dir/metrics.jsonl" > "$dir/job.log" 2>&1 &
  local launcher=$!
  for _ in $(seq 300); do  # up to 60 s for both hosts to start training
    sleep 0.2
    [ "$(wc -l 2> /dev/null < "$dir/metrics.jsonl" || echo 0)" -ge 20 ] && break
  done
  [ "$(wc -l 2> /dev/null < "$dir/metrics.jsonl" || echo 0)" -ge 20 ] || { cat "$dir/job.log"; fail "no training"; }
  local cut; cut=$(now_ms)
  ip -n "$ns_a" link set veth0 down || fail "cutting the link"
  local ranks_end="" job_end=""
  for _ in $(seq 600); do  # poll for up to 120 s
    sleep 0.2
    local now; now=$(now_ms)
    if [ -z "$ranks_end" ] && ! pgrep -f "^$zerodp .*$dir/metrics.jsonl" > /dev/null; then
      ranks_end=$now
    fi
    if [ -z "$job_end" ] && ! kill -0 "$launcher" 2> /dev/null && [ -z "$(ip netns pids "$ns_b")" ]; then
      job_end=$now
    fi
    [ -n "$ranks_end" ] && [ -n "$job_end" ] && break
  done
  wait "$launcher"
  local rc=$?
  echo "--- mpirun's output (exit code $rc) ---"
  tr '\r' '\n' < "$dir/job.log" | grep -v '^.\[Kstep' | grep -v '^step' | tail -n 12
  for r in 0 1; do echo "--- rank $r's stderr ---"; cat "$dir/out/1/rank.$r/stderr"; done
  echo "---"
  [ -n "$ranks_end" ] || fail "the ranks still ran 120 s after the link was cut"
  [ -n "$job_end" ] || fail "mpirun or host b's daemon still ran 120 s after the link was cut"
  [ "$rc" != 0 ] || fail "mpirun exited 0 after the link was cut"
  grep -q "rank 0: timed out after 3000 ms waiting for rank 1" "$dir/out/1/rank.0/stderr" ||
    fail "rank 0 on $host_a did not report the timeout naming rank 1"
  grep -q "rank 1: timed out after 3000 ms waiting for rank 0" "$dir/out/1/rank.1/stderr" ||
    fail "rank 1 on $host_b did not report the timeout naming rank 0"
  local ranks_ms=$(( ranks_end - cut )) job_ms=$(( job_end - cut ))
  # Bound: the comm timeout, plus the collective in flight and exit (10 s).
  [ "$ranks_ms" -le $(( (timeout_s + 10) * 1000 )) ] || fail "the ranks took $ranks_ms ms to end (bound 13 s)"
  echo "link cut: both ranks ended with a timeout error after $ranks_ms ms (comm timeout ${timeout_s} s);" \
       "the whole job after $job_ms ms, exit code $rc"
}

case $mode in
  same-bits)
    same_bits 3 bf16
    same_bits 1 fp16
    echo "two hosts: identical" ;;
  cut-link) cut_link ;;
  *) fail "unknown mode $mode" ;;
esac
