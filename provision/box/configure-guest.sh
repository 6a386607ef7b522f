#!/bin/sh
# Runs inside the box's chroot at build time (see build-debian.sh).
set -eu

echo testbed > /etc/hostname
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' > /etc/hosts
echo 'LABEL=testbed-root / ext4 defaults,noatime 0 1' > /etc/fstab

# One network stack: ifupdown + dhclient on the management NIC. Provisioning
# rewrites this file with the site network (eth1) added.
cat > /etc/network/interfaces <<'EOF'
auto lo
iface lo inet loopback

auto eth0
allow-hotplug eth0
iface eth0 inet dhcp
EOF
# `auto`: networking.service asks for the lease as soon as userspace runs
# (`allow-hotplug` alone waited ~25 s under TCG for udev's event; it stays as the
# fallback should eth0 appear later). Retry DISCOVER after 1-2 s, not 6+.
cat >> /etc/dhcp/dhclient.conf <<'EOF'
initial-interval 1;
backoff-cutoff 2;
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
PrintMotd no
PrintLastLog no
EOF
# The testbed logs in over SSH thousands of times: no message of the day
# (pam_motd ran the update-motd.d scripts on every login, ~1 s under TCG).
sed -i '/pam_motd/d' /etc/pam.d/sshd
# A host key is made per VM at first boot, not baked into the shared box: one
# Ed25519 key (`ssh-keygen -A` also makes RSA 3072, about 20 s of emulated CPU
# per VM under TCG, which delayed sshd past Vagrant's connect timeout).
rm -f /etc/ssh/ssh_host_*
echo "HostKey /etc/ssh/ssh_host_ed25519_key" >> /etc/ssh/sshd_config.d/testbed.conf
# sshd listens on every address, so it need not wait for network.target (measured
# under TCG: it started 34 s into userspace, after eth0's DHCP, and took 30 s more
# with its ExecStartPre runs). Start it early; the config is validated when the box
# is built (sshd -t below), not on every boot.
sed -e 's/^After=.*/After=local-fs.target/' -e '/^ExecStartPre=/d' \
    /usr/lib/systemd/system/ssh.service > /etc/systemd/system/ssh.service
mkdir -p /etc/systemd/system/ssh.service.d
cat > /etc/systemd/system/ssh.service.d/hostkeys.conf <<'EOF'
[Service]
ExecStartPre=/bin/sh -c 'test -s /etc/ssh/ssh_host_ed25519_key || ssh-keygen -q -t ed25519 -N "" -f /etc/ssh/ssh_host_ed25519_key'
EOF
mkdir -p /run/sshd && ssh-keygen -q -t ed25519 -N "" -f /tmp/check_host_key && /usr/sbin/sshd -t -h /tmp/check_host_key && rm -f /tmp/check_host_key*

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
# A lean boot (measured with systemd-analyze blame under TCG): kernel modules
# the guests never use (each modprobe@ unit cost 7-11 s of emulated CPU at
# boot), ldconfig and update-done (they ran on every new VM: ConditionNeedsUpdate),
# and the journal flush (the journal stays in memory; a testbed VM is disposable).
for unit in modprobe@drm.service modprobe@efi_pstore.service modprobe@fuse.service \
            modprobe@configfs.service ldconfig.service systemd-update-done.service \
            systemd-journal-flush.service e2scrub_reap.service getty-static.service; do
  systemctl mask "$unit" >/dev/null 2>&1 || true
done
mkdir -p /etc/systemd/journald.conf.d
printf '[Journal]\nStorage=volatile\nRuntimeMaxUse=32M\n' > /etc/systemd/journald.conf.d/testbed.conf
# E4: MariaDB runs only as the jobs' private instances; the NFS server is started by the
# E4 suite for its run (disabled, not masked, with rpcbind it may want)
systemctl disable mariadb.service >/dev/null 2>&1 || true
systemctl mask mariadb.service >/dev/null 2>&1 || true
for unit in nfs-server.service rpcbind.service rpcbind.socket; do
  systemctl disable "$unit" >/dev/null 2>&1 || true
done
# condor and xrootd are unmasked by provisioning once configured
systemctl unmask condor.service xrootd@.service cmsd@.service >/dev/null 2>&1 || true
systemctl disable condor.service >/dev/null 2>&1 || true
systemctl enable ssh.service serial-getty@ttyS0.service >/dev/null 2>&1 || true

# A small initrd with just the virtio drivers for direct kernel boot with
# root on /dev/vda (MODULES=most is 37 MB and slow to unpack under TCG).
# ifupdown-pre (udev settle, ~30 s under TCG) is masked: virtio_net is in the
# initrd, so eth0 exists when networking.service runs (hotplug is the fallback).
printf 'virtio_pci\nvirtio_blk\nvirtio_net\next4\ncrc32c_generic\n' > /etc/initramfs-tools/modules
sed -i 's/^MODULES=.*/MODULES=list/' /etc/initramfs-tools/initramfs.conf
update-initramfs -u -k all >/dev/null
