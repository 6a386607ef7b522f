# Every host: per-testbed SSH key, /etc/hosts, profile sysctls.
. provision/lib.sh
if [ "${TB_EXISTING:-0}" = 1 ]; then
  # An existing host (docs/existing-hosts.md) keeps its own logins, host name and network
  # files: the site's host names go into a marked block of /etc/hosts, and its site
  # address was put on its site interface by provision/existing/prepare.sh.
  put etc/testbed/host.env
  put etc/testbed/hosts
  put_block /etc/hosts etc/testbed/hosts
else
  install -d -m 0700 -o vagrant -g vagrant /home/vagrant/.ssh
  if ! cmp -s secrets/authorized_keys /home/vagrant/.ssh/authorized_keys; then
    install -m 0600 -o vagrant -g vagrant secrets/authorized_keys /home/vagrant/.ssh/authorized_keys
  fi
  put etc/hosts
  put etc/testbed/host.env
  # The site network (eth1) is configured here, not by Vagrant: a static address
  # from the topology, persistent across reboots. A no-op once it is up.
  put etc/network/interfaces
  if ! ip -4 -o addr show dev eth1 | grep -q " ${TB_SITE_ADDRESS%/*}/"; then
    ifdown --force eth1 >/dev/null 2>&1 || true
    ifup eth1 >/dev/null 2>&1 || { ip addr add "$TB_SITE_ADDRESS" dev eth1 && ip link set eth1 up; }
    echo "testbed: site address $TB_SITE_ADDRESS on eth1"
  fi
  hostname "$TB_HOST"
  echo "$TB_HOST" > /etc/hostname
fi
put etc/sysctl.d/90-testbed-profile.conf
sysctl -q -p /etc/sysctl.d/90-testbed-profile.conf
