#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A shaped link between the two hosts of two_host_bed.sh: tbf at 1 Gbit/s
# each way (and netem's 1 ms delay where the kernel has netem; this one may
# not, and the test says so), then a short `zerodp bench comm` with 2 ranks
# on each host. It checks that the shape is in place, that bench comm ran
# across the hosts and printed its table, and that the bytes crossed the link
# both ways (the veth counters). The achieved rate is printed, never judged:
# scripts/bench-two-hosts and docs/scale.md measure it.
# Needs root and tc with tbf; exits 77 (skipped) with the reason otherwise.
# usage: two_hosts_shaped.sh ZERODP MPIRUN
set -uo pipefail
zerodp=$1
export BED_MPIRUN=$2  # read by two_host_bed.sh
# shellcheck source=two_host_bed.sh
. "$(dirname "$0")/two_host_bed.sh"
bed_up
delay=1ms
bed_has_qdisc netem || { echo "note: no netem in this kernel, the link is not delayed: $(cat "$BED_DIR/err")"; delay=""; }
bed_shape 1gbit "$delay"
tc -n "$BED_NS_A" qdisc show dev veth0 | grep -q "tbf .*rate 1Gbit" || fail "tbf is not on host a's link"
tc -n "$BED_NS_B" qdisc show dev veth0 | grep -q "tbf .*rate 1Gbit" || fail "tbf is not on host b's link"

# 2 ranks per host: all-reduce of 1 MiB and 4 MiB. Each rank sends its peers
# 3/4 of the buffer per call, half of it across the link; at least 11 calls a size.
max=$((4 << 20))
a0=$(bed_tx_bytes a) b0=$(bed_tx_bytes b)
bed_sample_start
BED_TIMEOUT=240 bed_mpirun 4 2 --display-map "$zerodp" bench comm --backend mpi --ranks 4 --collective all_reduce \
  --min-bytes 1M --max-bytes 4M --quick --baseline none > "$BED_DIR/out" 2>&1 ||
  { cat "$BED_DIR/out"; fail "bench comm across the shaped link failed"; }
bed_sample_stop
a=$(( $(bed_tx_bytes a) - a0 )) b=$(( $(bed_tx_bytes b) - b0 ))
sed -n '/^# zerodp bench comm/,$p' "$BED_DIR/out"
grep -q "node: $BED_HOST_A.*Num procs: 2" "$BED_DIR/out" && grep -q "node: $BED_ADDR_B.*Num procs: 2" "$BED_DIR/out" ||
  fail "the ranks were not placed two on each host"
grep -Eq '^ +4MiB +1048576 +fp32 ' "$BED_DIR/out" || fail "bench comm printed no row for 4 MiB"
[ "$a" -gt "$max" ] && [ "$b" -gt "$max" ] || fail "too few bytes crossed the link: a->b $a, b->a $b (expected > $max each)"
echo "shaped link: $BED_SHAPE; bench comm ran on 2 hosts x 2 ranks; a->b $a B, b->a $b B;" \
     "highest 1-s rate a->b $(bed_peak_rate a) Gbit/s, b->a $(bed_peak_rate b) Gbit/s"
