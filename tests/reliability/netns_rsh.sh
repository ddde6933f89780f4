#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# mpirun's remote-shell agent for hosts that are network namespaces on this
# machine: stands in for ssh. mpirun calls it as `netns_rsh.sh HOST COMMAND...`
# (plm_rsh_agent); ZDP_NETNS_HOSTS maps addresses to namespaces, host names
# and optionally the host's CPUs, "ADDR=NAMESPACE=HOSTNAME[=CPUS] ..." (CPUS
# in taskset's list form, 0,1). Like sshd, it hands the command line to a
# shell on the "remote host": inside the namespace, with its own host name
# (a UTS namespace), so nothing of the launching host's network is shared,
# and on the host's CPUs alone, so its ranks do not share the other's cores.
host=$1
shift
for entry in $ZDP_NETNS_HOSTS; do
  addr=${entry%%=*}
  rest=${entry#*=}
  if [ "$addr" = "$host" ]; then
    ns=${rest%%=*}
    rest=${rest#*=}
    name=${rest%%=*}
    cpus=""
    [ "$rest" != "$name" ] && cpus=${rest#*=}
    if [ -n "$cpus" ]; then
      exec ip netns exec "$ns" unshare --uts taskset -c "$cpus" sh -c "hostname $name && $*"
    fi
    exec ip netns exec "$ns" unshare --uts sh -c "hostname $name && $*"
  fi
done
echo "netns_rsh.sh: no namespace for host '$host' in ZDP_NETNS_HOSTS='$ZDP_NETNS_HOSTS'" >&2
exit 255
