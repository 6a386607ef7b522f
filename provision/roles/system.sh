# Every host: per-testbed SSH key, /etc/hosts, profile sysctls.
. provision/lib.sh
install -d -m 0700 -o vagrant -g vagrant /home/vagrant/.ssh
if ! cmp -s secrets/authorized_keys /home/vagrant/.ssh/authorized_keys; then
  install -m 0600 -o vagrant -g vagrant secrets/authorized_keys /home/vagrant/.ssh/authorized_keys
fi
put etc/hosts
put etc/testbed/host.env
hostname "$TB_HOST"
echo "$TB_HOST" > /etc/hostname
put etc/sysctl.d/90-testbed-profile.conf
sysctl -q -p /etc/sysctl.d/90-testbed-profile.conf
