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
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2; without them it
# exits 77, which CTest reports as skipped, with the reason.
# usage: mpi_two_hosts.sh ZERODP MPIRUN same-bits|cut-link
set -uo pipefail
zerodp=$1 mpirun=$2 mode=$3
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
ns_a=zdp$$a ns_b=zdp$$b
host_a=hosta$$ host_b=hostb$$
addr_a=192.0.2.1 addr_b=192.0.2.2

# `ip netns add` turns /run/netns into a mount point the first time; if this
# test did that, it undoes it (a chroot could not be removed otherwise). The
# two tests of this script hold one CTest RESOURCE_LOCK, so neither unmounts
# it under the other.
netns_was_mounted=0
mountpoint -q /run/netns 2> /dev/null && netns_was_mounted=1
cleanup() {
  for ns in "$ns_a" "$ns_b"; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  [ $netns_was_mounted = 0 ] && [ -z "$(ls -A /run/netns 2> /dev/null)" ] && umount /run/netns 2> /dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
# Each setup step must work here, or the machine cannot host the test (not
# root, no iproute2, a chroot where namespaces cannot switch mounts): skip,
# saying which step and what it printed.
setup() { "$@" > /dev/null 2> "$dir/err" || skip "cannot set up the hosts: '$*' failed: $(tr '\n' ' ' < "$dir/err")"; }

[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip > /dev/null || skip "ip (iproute2) is not installed"
setup ip netns add "$ns_a"
setup ip netns add "$ns_b"
setup ip link add veth0 netns "$ns_a" type veth peer name veth0 netns "$ns_b"
setup ip -n "$ns_a" addr add "$addr_a/24" dev veth0
setup ip -n "$ns_b" addr add "$addr_b/24" dev veth0
for ns in "$ns_a" "$ns_b"; do
  setup ip -n "$ns" link set lo up
  setup ip -n "$ns" link set veth0 up
  # A host whose peer vanished without a word (no FIN, no RST) gives up after
  # ~13 s of retransmissions instead of Linux's default ~15 min: OpenMPI's
  # launcher learns of the lost host only through TCP (docs/reliability.md).
  setup ip netns exec "$ns" sh -c 'echo 5 > /proc/sys/net/ipv4/tcp_retries2'
done
setup unshare --uts true
setup ip netns exec "$ns_a" cat /sys/class/net/veth0/statistics/tx_bytes

export ZDP_NETNS_HOSTS="$addr_a=$ns_a=$host_a $addr_b=$ns_b=$host_b"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi_opts=(--hostfile "$dir/hosts" --mca plm_rsh_agent "$here/netns_rsh.sh"
          --mca btl self,vader,tcp --mca btl_tcp_if_include 192.0.2.0/24 --mca oob_tcp_if_include 192.0.2.0/24
          --mca oob_tcp_keepalive_time 8 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3)
on_host_a() { ip netns exec "$ns_a" unshare --uts sh -c "hostname $host_a && exec \"\$@\"" sh "$@"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
link_bytes() { ip netns exec "$ns_a" cat /sys/class/net/veth0/statistics/tx_bytes; }
common=(train --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0)

same_bits() {
  local stage=$1 precision=$2
  local run=(--steps 6 --stage "$stage" --precision "$precision" --comm-timeout 60)
  "$zerodp" "${common[@]}" "${run[@]}" --ranks 4 --metrics "$dir/thread.jsonl" > "$dir/thread.log" ||
    fail "the thread run failed"
  local before; before=$(link_bytes)
  on_host_a timeout 240 "$mpirun" "${mpi_opts[@]}" -np 4 --map-by slot --display-map "$zerodp" "${common[@]}" \
    "${run[@]}" --backend mpi --metrics "$dir/mpi.jsonl" > "$dir/mpi.log" 2>&1 ||
    { cat "$dir/mpi.log"; fail "the two-host run failed"; }
  local crossed=$(( $(link_bytes) - before ))
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
  printf '%s slots=1\n%s slots=1\n' "$addr_a" "$addr_b" > "$dir/hosts"
  on_host_a timeout 300 "$mpirun" "${mpi_opts[@]}" -np 2 --output-filename "$dir/out" "$zerodp" "${common[@]}" \
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
    printf '%s slots=2\n%s slots=2\n' "$addr_a" "$addr_b" > "$dir/hosts"
    same_bits 3 bf16
    same_bits 1 fp16
    echo "two hosts: identical" ;;
  cut-link) cut_link ;;
  *) fail "unknown mode $mode" ;;
esac
