#!/bin/bash
# The site network across hypervisors: a VXLAN port (the kernel's own) on the bridge of
# this hypervisor's copy of the site network, with one all-zero forwarding entry per other
# hypervisor (broadcasts and unknown addresses go to each; the rest is learnt). Run as
# root with the rendered settings first (provision/templates/hypervisor/site-link.env.j2):
#   cat site-link.env site-link.sh | bash -s plan|up|down
#   plan  print what `up` would change (would<TAB>command), change nothing
#   up    make the port what the settings say; idempotent
#   down  remove the port (libvirt removes the network and its bridge)
set -euo pipefail
mode=${1:?usage: site-link.sh plan|up|down}
step() { if [ "$mode" = plan ]; then printf 'would\t%s\n' "$*"; else "$@"; fi; }
for tool in ip bridge virsh; do
  command -v "$tool" >/dev/null || { printf 'missing\t%s\n' "$tool"; exit 3; }
done
have=$(ip -d -o link show dev "$VXLAN" 2>/dev/null || true)
if [ "$mode" = down ]; then
  [ -z "$have" ] || { ip link del dev "$VXLAN"; printf 'done\tremoved %s\n' "$VXLAN"; }
  exit 0
fi
br=$(virsh -q -c qemu:///system net-info "$NETWORK" 2>/dev/null | awk '$1 == "Bridge:" {print $2}' || true)
if [ -z "$br" ]; then
  [ "$mode" = plan ] || { printf 'conflict\tno libvirt network %s here\n' "$NETWORK"; exit 3; }
  br="<the bridge of $NETWORK>"
fi
same() { grep -q -- "$1" <<<"$have"; }
if [ -n "$have" ] && ! { same "vxlan id $VNI " && same " local $LOCAL " && same "dstport $DSTPORT " &&
                         { [ -z "$DEV" ] || same " dev $DEV "; }; }; then
  step ip link del dev "$VXLAN"
  have=""
fi
[ -n "$have" ] || step ip link add "$VXLAN" type vxlan id "$VNI" local "$LOCAL" dstport "$DSTPORT" ${DEV:+dev "$DEV"}
sent=""
[ -z "$have" ] || sent=$(bridge fdb show dev "$VXLAN" | awk '$1 == "00:00:00:00:00:00" && $2 == "dst" {print $3}')
for peer in $PEERS; do
  grep -qx -- "$peer" <<<"$sent" || step bridge fdb append 00:00:00:00:00:00 dev "$VXLAN" dst "$peer"
done
for old in $sent; do
  [[ " $PEERS " == *" $old "* ]] || step bridge fdb del 00:00:00:00:00:00 dev "$VXLAN" dst "$old"
done
if [ -z "$have" ] || ! same "mtu $MTU " || ! same "master $br " || ! grep -q '[<,]UP[,>]' <<<"$have"; then
  step ip link set dev "$VXLAN" mtu "$MTU" master "$br" up
fi
