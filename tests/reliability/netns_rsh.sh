#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# mpirun's remote-shell agent for hosts that are network namespaces on this
# machine: stands in for ssh. mpirun calls it as `netns_rsh.sh HOST COMMAND...`
# (plm_rsh_agent); ZDP_NETNS_HOSTS maps addresses to namespaces and host names,
# "ADDR=NAMESPACE=HOSTNAME ...". Like sshd, it hands the command line to a
# shell on the "remote host": inside the namespace, with its own host name
# (a UTS namespace), so nothing of the launching host's network is shared.
host=$1
shift
for entry in $ZDP_NETNS_HOSTS; do
  addr=${entry%%=*}
  rest=${entry#*=}
  if [ "$addr" = "$host" ]; then
    exec ip netns exec "${rest%%=*}" unshare --uts sh -c "hostname ${rest#*=} && $*"
  fi
done
echo "netns_rsh.sh: no namespace for host '$host' in ZDP_NETNS_HOSTS='$ZDP_NETNS_HOSTS'" >&2
exit 255
