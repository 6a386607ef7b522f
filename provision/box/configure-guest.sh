#!/bin/sh
# Runs inside the box's chroot at build time (see build-debian.sh).
set -eu

echo testbed > /etc/hostname
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' > /etc/hosts
echo 'LABEL=testbed-root / ext4 defaults,noatime 0 1' > /etc/fstab

# One network stack: ifupdown + dhclient on the management NIC. Vagrant's
# Debian guest plugin appends the private networks to this same file.
cat > /etc/network/interfaces <<'EOF'
auto lo
iface lo inet loopback

allow-hotplug eth0
iface eth0 inet dhcp
EOF

# vagrant user: sudo without password; Vagrant's well-known key only until the
# first provisioner replaces it with the per-testbed key.
id vagrant >/dev/null 2>&1 || useradd -m -s /bin/bash vagrant
passwd -l vagrant >/dev/null
passwd -l root >/dev/null
echo 'vagrant ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/vagrant
chmod 0440 /etc/sudoers.d/vagrant
install -d -m 0700 -o vagrant -g vagrant /home/vagrant/.ssh
install -m 0600 -o vagrant -g vagrant /tmp/vagrant.pub /home/vagrant/.ssh/authorized_keys

cat > /etc/ssh/sshd_config.d/testbed.conf <<'EOF'
UseDNS no
PasswordAuthentication no
PermitRootLogin no
EOF
# A host key is made per VM at first boot, not baked into the shared box: one
# Ed25519 key (`ssh-keygen -A` also makes RSA 3072, about 20 s of emulated CPU
# per VM under TCG, which delayed sshd past Vagrant's connect timeout).
rm -f /etc/ssh/ssh_host_*
echo "HostKey /etc/ssh/ssh_host_ed25519_key" >> /etc/ssh/sshd_config.d/testbed.conf
mkdir -p /etc/systemd/system/ssh.service.d
cat > /etc/systemd/system/ssh.service.d/hostkeys.conf <<'EOF'
[Service]
ExecStartPre=
ExecStartPre=/bin/sh -c 'test -s /etc/ssh/ssh_host_ed25519_key || ssh-keygen -q -t ed25519 -N "" -f /etc/ssh/ssh_host_ed25519_key'
ExecStartPre=/usr/sbin/sshd -t
EOF

# Nothing starts before provisioning has placed keys and config, and nothing
# phones home: no time sync, no apt timers.
for unit in condor.service xrootd@.service cmsd@.service mdmonitor.service \
            mdcheck_start.timer mdcheck_continue.timer mdmonitor-oneshot.timer \
            apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_all.timer \
            fstrim.timer iperf3.service sysstat.service systemd-timesyncd.service \
            ifupdown-pre.service; do
  systemctl disable "$unit" >/dev/null 2>&1 || true
  systemctl mask "$unit" >/dev/null 2>&1 || true
done
# condor and xrootd are unmasked by provisioning once configured
systemctl unmask condor.service xrootd@.service cmsd@.service >/dev/null 2>&1 || true
systemctl disable condor.service >/dev/null 2>&1 || true
systemctl enable ssh.service serial-getty@ttyS0.service >/dev/null 2>&1 || true

# A small initrd with just the virtio drivers for direct kernel boot with
# root on /dev/vda (MODULES=most is 37 MB and slow to unpack under TCG).
# ifupdown-pre (udev settle, ~30 s under TCG) is masked: eth0 is hotplug.
printf 'virtio_pci\nvirtio_blk\nvirtio_net\next4\ncrc32c_generic\n' > /etc/initramfs-tools/modules
sed -i 's/^MODULES=.*/MODULES=list/' /etc/initramfs-tools/initramfs.conf
update-initramfs -u -k all >/dev/null
