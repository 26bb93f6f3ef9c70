#!/usr/bin/env bash
# Can podman's containers find each other by name? The compose stack's do (redis, vector-gateway, milvus), through
# the DNS server of podman's network backend: netavark's aardvark-dns, or CNI's dnsname plugin. A podman installed
# without it (Debian's podman only recommends them) fails the compose smoke after its 600 s health wait with
# "Name or service not known: redis"; this says so in a second, before any image is built (.ci/run runs it).
# Exit 0: names resolve; 1: they will not, and the line on stderr names the packages to install.
set -euo pipefail
# Where podman looks for its helper binaries (containers.conf helper_binaries_dir) and CNI for its plugins.
helpers=${PODMAN_HELPER_DIRS:-/usr/local/libexec/podman /usr/local/lib/podman /usr/libexec/podman /usr/lib/podman}
plugins=${CNI_PLUGIN_DIRS:-/usr/local/libexec/cni /usr/libexec/cni /usr/lib/cni /opt/cni/bin}
found() {  # found NAME DIR...: an executable NAME in one of the folders
  local name=$1 dir
  shift
  for dir in "$@"; do [ -x "$dir/$name" ] && return 0; done
  return 1
}
backend=$(podman info --format '{{.Host.NetworkBackend}}' 2>/dev/null || true)
# shellcheck disable=SC2086  # the folder lists split on spaces, as written above
case "$backend" in
  netavark)
    # netavark runs iptables for every network: without it no container starts ("netavark: No such file or directory")
    if ! command -v iptables >/dev/null && [ ! -x /usr/sbin/iptables ]; then
      echo "podman's network backend netavark needs iptables, and no container starts without it:" \
        "apt-get install iptables." >&2
      exit 1
    fi
    found aardvark-dns $helpers && exit 0
    fix="install aardvark-dns, netavark's DNS server: apt-get install aardvark-dns" ;;
  cni)
    found dnsname $plugins && exit 0
    fix="install CNI's dnsname plugin (apt-get install golang-github-containernetworking-plugin-dnsname), or move \
podman to netavark (apt-get install netavark aardvark-dns; network_backend = \"netavark\" in containers.conf)" ;;
  *)
    fix="install netavark and aardvark-dns: apt-get install netavark aardvark-dns" ;;
esac
echo "podman's containers cannot resolve each other's names (network backend: ${backend:-unknown}): $fix." \
  "Without it the compose smoke fails after its 600 s wait with 'Name or service not known: redis'." >&2
exit 1
