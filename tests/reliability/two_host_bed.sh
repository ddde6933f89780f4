# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034  # BED_* are read by the scripts that source this
# The two-host test bed, sourced by the scripts that use it (the two-host
# tests and the scripts that measure across it): two network
# namespaces joined by a veth pair (192.0.2.0/24, TEST-NET-1: the addresses
# exist only inside them), each with its own host name; mpirun runs on host a
# and starts host b's daemon through netns_rsh.sh, as it would through ssh.
# Ranks on one host talk through shared memory (vader), across hosts through
# TCP over the veth link, and only there (btl/oob_tcp_if_include).
#
#   (sourcing)             BED_NS_A/B, BED_HOST_A/B, BED_ADDR_A/B, BED_DIR (a
#                          temporary folder removed with the bed) and the EXIT
#                          trap bed_down
#   bed_up                 make the hosts; each gets its own half of the CPUs
#                          this shell may use (BED_CPUS_A/B, BED_CORES_PER_HOST;
#                          both all of them on a machine of one)
#   bed_shape RATE [DELAY] shape both directions of the link: tbf at RATE
#                          (e.g. 1gbit, 10gbit; "" or none: no limit) and, when
#                          DELAY is given (e.g. 1ms, 100us), netem's delay
#                          below it; replaces an earlier shape; BED_SHAPE
#                          names it (none, 1gbit, 1gbit+1ms)
#   bed_unshape            back to the plain link
#   bed_has_qdisc KIND     whether this kernel has the qdisc (tbf, netem)
#   bed_mpirun NP SLOTS ARGS...   mpirun on host a, SLOTS ranks per host
#   bed_tx_bytes a|b       bytes host a (b) has sent on the link so far
#   bed_sample_start / bed_sample_stop    the link's byte counters every 0.1 s
#   bed_peak_rate a|b      the highest rate over a 1 s window since the start
#   bed_down               remove everything (the EXIT trap; a caller that sets
#                          its own calls it from there)
#
# Each setup step must work here, or the machine cannot host the bed (not
# root, no iproute2, a chroot where namespaces cannot switch mounts, a kernel
# without the qdisc): the script exits 77 (skipped), saying which step failed
# and what it printed. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2.
# Scripts that share the bed hold one CTest RESOURCE_LOCK (network_namespaces).

bed_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BED_DIR=$(mktemp -d)
BED_NS_A=zdp$$a BED_NS_B=zdp$$b
BED_HOST_A=hosta$$ BED_HOST_B=hostb$$
BED_ADDR_A=192.0.2.1 BED_ADDR_B=192.0.2.2
BED_TIMEOUT=${BED_TIMEOUT:-600}  # seconds one bed_mpirun may take
BED_MPIRUN=${BED_MPIRUN:-mpirun}
bed_sampler=""
BED_SHAPE=none
BED_CPUS_A="" BED_CPUS_B="" BED_CORES_PER_HOST=0

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
bed_step() { "$@" > /dev/null 2> "$BED_DIR/err" || skip "cannot set up the hosts: '$*' failed: $(tr '\n' ' ' < "$BED_DIR/err")"; }

# `ip netns add` turns /run/netns into a mount point the first time; if this
# bed did that, bed_down undoes it (a chroot could not be removed otherwise).
bed_netns_was_mounted=0
mountpoint -q /run/netns 2> /dev/null && bed_netns_was_mounted=1

bed_down() {
  bed_sample_stop
  for ns in "$BED_NS_A" "$BED_NS_B"; do
    pids=$(ip netns pids "$ns" 2> /dev/null)
    # shellcheck disable=SC2086  # one pid per word
    [ -n "$pids" ] && kill -9 $pids 2> /dev/null
    ip netns del "$ns" 2> /dev/null
  done
  [ $bed_netns_was_mounted = 0 ] && [ -z "$(ls -A /run/netns 2> /dev/null)" ] && umount /run/netns 2> /dev/null
  rm -rf "$BED_DIR"
}

trap bed_down EXIT

# The CPUs this shell may run on, one number per line ("0-3,8" -> 0 1 2 3 8).
bed_allowed_cpus() {
  local list range
  list=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
  for range in ${list//,/ }; do
    if [[ $range == *-* ]]; then seq "${range%-*}" "${range#*-}"; else echo "$range"; fi
  done
}

# Two real hosts do not share cores; the bed's run on one machine. Each host
# runs on its own half of it: its launcher under taskset, and so its ranks
# (mpirun runs them unbound, below). Before, each host's OpenMPI bound its
# first rank to core 0: the same core on both hosts while the other idled,
# the compute term's miss of docs/scale.md.
bed_split_cpus() {
  local cpus half
  mapfile -t cpus < <(bed_allowed_cpus)
  if [ ${#cpus[@]} -lt 2 ]; then
    BED_CPUS_A=${cpus[*]:-0} BED_CPUS_B=${cpus[*]:-0} BED_CORES_PER_HOST=1
    return
  fi
  half=$(( ${#cpus[@]} / 2 ))
  BED_CPUS_A=$(IFS=,; echo "${cpus[*]:0:half}")
  BED_CPUS_B=$(IFS=,; echo "${cpus[*]:half:half}")
  BED_CORES_PER_HOST=$half
}

bed_up() {
  [ "$(id -u)" = 0 ] || skip "network namespaces need root"
  command -v ip > /dev/null || skip "ip (iproute2) is not installed"
  command -v tc > /dev/null || skip "tc (iproute2) is not installed"
  bed_step ip netns add "$BED_NS_A"
  bed_step ip netns add "$BED_NS_B"
  bed_step ip link add veth0 netns "$BED_NS_A" type veth peer name veth0 netns "$BED_NS_B"
  bed_step ip -n "$BED_NS_A" addr add "$BED_ADDR_A/24" dev veth0
  bed_step ip -n "$BED_NS_B" addr add "$BED_ADDR_B/24" dev veth0
  for ns in "$BED_NS_A" "$BED_NS_B"; do
    bed_step ip -n "$ns" link set lo up
    bed_step ip -n "$ns" link set veth0 up
    # A host whose peer vanished without a word (no FIN, no RST) gives up after
    # ~13 s of retransmissions instead of Linux's default ~15 min: OpenMPI's
    # launcher learns of the lost host only through TCP (docs/reliability.md).
    bed_step ip netns exec "$ns" sh -c 'echo 5 > /proc/sys/net/ipv4/tcp_retries2'
  done
  bed_step unshare --uts true
  bed_step ip netns exec "$BED_NS_A" cat /sys/class/net/veth0/statistics/tx_bytes
  command -v taskset > /dev/null || skip "taskset (util-linux) is not installed"
  bed_split_cpus
  bed_step taskset -c "$BED_CPUS_B" true
  export ZDP_NETNS_HOSTS="$BED_ADDR_A=$BED_NS_A=$BED_HOST_A=$BED_CPUS_A $BED_ADDR_B=$BED_NS_B=$BED_HOST_B=$BED_CPUS_B"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # The launcher's keepalives: a cut link is noticed in seconds, not minutes.
  # No binding: OpenMPI would bind each host's first rank to core 0 of the
  # whole machine, whatever its host's CPUs; unbound, its ranks keep them.
  # shellcheck disable=SC2054  # the commas are OpenMPI's lists
  BED_MPI_OPTS=(--hostfile "$BED_DIR/hosts" --mca plm_rsh_agent "$bed_here/netns_rsh.sh" --bind-to none
                --mca btl self,vader,tcp --mca btl_tcp_if_include 192.0.2.0/24 --mca oob_tcp_if_include 192.0.2.0/24
                --mca oob_tcp_keepalive_time 8 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3)
}

bed_on_host_a() {
  ip netns exec "$BED_NS_A" unshare --uts taskset -c "$BED_CPUS_A" sh -c "hostname $BED_HOST_A && exec \"\$@\"" sh "$@"
}

bed_ns() { case $1 in a) echo "$BED_NS_A" ;; b) echo "$BED_NS_B" ;; *) fail "no host '$1' (a or b)" ;; esac; }
bed_tx_bytes() { ip netns exec "$(bed_ns "$1")" cat /sys/class/net/veth0/statistics/tx_bytes; }

# A throw-away probe on host a's loopback: does the kernel know the qdisc?
bed_has_qdisc() {
  local args
  case $1 in
    tbf) args=(tbf rate 1gbit burst 64kb latency 10ms) ;;
    netem) args=(netem delay 1ms) ;;
    *) fail "bed_has_qdisc: unknown qdisc '$1'" ;;
  esac
  tc -n "$BED_NS_A" qdisc add dev lo root "${args[@]}" 2> "$BED_DIR/err" || return 1
  tc -n "$BED_NS_A" qdisc del dev lo root 2> /dev/null
  return 0
}

# RATE (tc's spelling: 10gbit, 1gbit, 500mbit) in bytes per second.
bed_rate_bytes() {
  local n=${1%%[a-zA-Z]*} unit=${1##*[0-9]}
  case ${unit,,} in
    gbit) echo $(( n * 125000000 )) ;;
    mbit) echo $(( n * 125000 )) ;;
    kbit) echo $(( n * 125 )) ;;
    *) fail "rate '$1': give kbit, mbit or gbit (e.g. 10gbit)" ;;
  esac
}

# Both directions: each host shapes what it sends (the root qdisc of its end).
# tbf's bucket holds 1 ms at the rate (at least 64 KiB: one GSO packet), its
# queue 20 ms; netem, below tbf, holds every packet DELAY before it leaves.
bed_shape() {
  local rate=${1:-none} delay=${2:-}
  bed_unshape
  [ -n "$delay" ] && ! bed_has_qdisc netem &&
    skip "cannot delay the link: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM): $(tr '\n' ' ' < "$BED_DIR/err")"
  for ns in "$BED_NS_A" "$BED_NS_B"; do
    local parent=(root handle 1:)
    if [ "$rate" != none ]; then
      bed_has_qdisc tbf ||
        skip "cannot limit the link's rate: this kernel has no tbf qdisc (CONFIG_NET_SCH_TBF): $(tr '\n' ' ' < "$BED_DIR/err")"
      local bytes burst
      bytes=$(bed_rate_bytes "$rate")
      burst=$(( bytes / 1000 > 65536 ? bytes / 1000 : 65536 ))
      bed_step tc -n "$ns" qdisc add dev veth0 root handle 1: tbf rate "$rate" burst "$burst" latency 20ms
      parent=(parent 1:1 handle 10:)
    fi
    [ -n "$delay" ] && bed_step tc -n "$ns" qdisc add dev veth0 "${parent[@]}" netem delay "$delay" limit 100000
  done
  BED_SHAPE=$rate${delay:++$delay}  # e.g. 1gbit+1ms
}

bed_unshape() {
  for ns in "$BED_NS_A" "$BED_NS_B"; do tc -n "$ns" qdisc del dev veth0 root 2> /dev/null; done
  BED_SHAPE=none
}

# mpirun on host a, NP ranks, SLOTS per host (filled in rank order: ranks
# 0..SLOTS-1 on host a), bounded by BED_TIMEOUT seconds; BED_MPI_EXTRA adds
# mpirun options for every run (e.g. "--mca btl_tcp_flags send").
bed_mpirun() {
  local np=$1 slots=$2
  shift 2
  printf '%s slots=%s\n%s slots=%s\n' "$BED_ADDR_A" "$slots" "$BED_ADDR_B" "$slots" > "$BED_DIR/hosts"
  # shellcheck disable=SC2086  # BED_MPI_EXTRA: words
  bed_on_host_a timeout "$BED_TIMEOUT" "$BED_MPIRUN" "${BED_MPI_OPTS[@]}" ${BED_MPI_EXTRA:-} -np "$np" --map-by slot "$@"
}

# Every 0.1 s: microseconds, host a's sent and received bytes (what host a
# receives is what host b sent), read by one bash loop inside host a with no
# process per sample.
bed_sample_start() {
  bed_sample_stop
  ip netns exec "$BED_NS_A" bash -c 'd=/sys/class/net/veth0/statistics
    while :; do
      read -r tx < $d/tx_bytes; read -r rx < $d/rx_bytes
      echo "${EPOCHREALTIME/./} $tx $rx"
      sleep 0.1
    done' > "$BED_DIR/samples" 2> /dev/null &
  bed_sampler=$!
}

bed_sample_stop() {
  [ -n "$bed_sampler" ] || return 0
  kill "$bed_sampler" 2> /dev/null
  wait "$bed_sampler" 2> /dev/null
  bed_sampler=""
}

# The highest rate (Gbit/s, 1e9 bits) host a (b) sent at over any window of
# at least 1 s between two samples (bed_sample_start).
bed_peak_rate() {
  local col
  case $1 in a) col=2 ;; b) col=3 ;; *) fail "no host '$1' (a or b)" ;; esac
  awk -v c="$col" '{ t[NR] = $1; b[NR] = $c }
    END { best = 0; j = 1
          for (i = 2; i <= NR; i++) {
            while (j < i && t[i] - t[j + 1] >= 1e6) j++
            if (t[i] - t[j] >= 1e6) { r = (b[i] - b[j]) * 8 / (t[i] - t[j]) / 1e3; if (r > best) best = r }
          }
          printf "%.3f\n", best }' "$BED_DIR/samples"
}
