# Every host: per-testbed SSH key, /etc/hosts, profile sysctls.
. provision/lib.sh
install -d -m 0700 -o vagrant -g vagrant /home/vagrant/.ssh
if ! cmp -s secrets/authorized_keys /home/vagrant/.ssh/authorized_keys; then
  install -m 0600 -o vagrant -g vagrant secrets/authorized_keys /home/vagrant/.ssh/authorized_keys
fi
put etc/hosts
put etc/testbed/host.env
# Vagrant sets the site address after boot; a bring-up that lost SSH at that
# moment leaves the second NIC down. A no-op when Vagrant did its part.
if ! ip -4 -o addr show | grep -q " ${TB_SITE_ADDRESS%/*}/"; then
  dev=$(ls /sys/class/net | grep -vx -e lo -e eth0 | head -1)
  ip addr add "$TB_SITE_ADDRESS" dev "$dev" && ip link set "$dev" up
  echo "testbed: site address $TB_SITE_ADDRESS set on $dev (Vagrant had not)"
fi
hostname "$TB_HOST"
echo "$TB_HOST" > /etc/hostname
put etc/sysctl.d/90-testbed-profile.conf
sysctl -q -p /etc/sysctl.d/90-testbed-profile.conf
