#!/bin/bash
# Two "lab machines" for the mixed-site test (docs/existing-hosts.md, "Trying it on one
# machine"): Debian 13 VMs that this script, not the testbed, creates, the way a site admin
# has machines of their own. Their image is the testbed's box with HTCondor and XRootD purged
# and its `vagrant` account removed (a lab machine has neither), and an `admin` account that
# logs in with a key made here and runs sudo without a password. First NIC on libvirt's NAT
# network `default` (SSH from this machine, apt from the Debian mirror), second on the
# site network of the topology `mixed`, defined here before `testbed up` (vagrant-libvirt
# takes a network it finds with that name and address as it is).
#
#   lab-hosts.sh base     DIR   the key (DIR/id_lab) and the labs' image only
#   lab-hosts.sh create   DIR   the key (DIR/id_lab), the two VMs, DIR/mixed.yaml
#   lab-hosts.sh loop     DIR   this machine's libvirt over SSH as a second hypervisor:
#                               sshd on 127.0.0.1 only, root by the key DIR/id_hv
#   lab-hosts.sh listing  DIR NAME   every file of lab NAME (path, size, mode), sorted
#   lab-hosts.sh destroy  DIR   the two VMs, their images and the site network
set -euo pipefail
VIRSH="virsh -c qemu:///system"
IMAGES=/var/lib/libvirt/images
BOX=$(ls -d /var/cache/grid-testbed/boxes/grid-testbed-debian13-* | grep -v patched | head -1)
SITE_NET=tb-mixed-site
LABS="lab1 lab2"
COMMANDS="base, create, loop, listing or destroy"
cmd=${1:?$COMMANDS}; dir=${2:?a folder for the key and the topology}

make_key() {  # the labs' admin key, DIR/id_lab
    mkdir -p "$dir"
    [ -f "$dir/id_lab" ] || ssh-keygen -q -t ed25519 -N "" -C lab-admin -f "$dir/id_lab"
}

lab_address() {  # the lab's address on `default`, from its DHCP lease there (by the first NIC's MAC:
    # domifaddr fails once `testbed down` has removed the site network of the second)
    local mac
    mac=$($VIRSH domiflist "$1" | awk '$3 == "default" {print $5; exit}')
    $VIRSH net-dhcp-leases default --mac "$mac" | awk '/ipv4/ {split($5, a, "/"); print a[1]; exit}'
}

ssh_lab() {
    local name=$1; shift
    ssh -i "$dir/id_lab" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
        -o LogLevel=ERROR -o ConnectTimeout=10 "admin@$(lab_address "$name")" "$@"
}

make_base() {  # the box's image, HTCondor and XRootD purged, vagrant gone, admin added
    local base=$IMAGES/tb-lab-base.raw mnt
    [ -s "$base" ] && return 0
    qemu-img convert -O raw "$BOX/box.img" "$base.part"
    mnt=$(mktemp -d)
    mount -o loop "$base.part" "$mnt"
    for fs in proc sys dev; do mount --bind /$fs "$mnt/$fs"; done
    chroot "$mnt" /bin/sh -ec '
        export DEBIAN_FRONTEND=noninteractive
        apt-get -y -q purge condor xrootd-server xrootd-server-plugins xrootd-client python3-xrootd >/dev/null
        apt-get -y -q autoremove --purge >/dev/null
        rm -rf /etc/condor /var/lib/condor /var/log/condor /etc/xrootd /etc/testbed
        userdel -r vagrant 2>/dev/null || true
        rm -f /etc/sudoers.d/vagrant
        useradd -m -s /bin/bash admin
        echo "admin ALL=(ALL) NOPASSWD: ALL" > /etc/sudoers.d/admin && chmod 0440 /etc/sudoers.d/admin
        install -d -m 0700 -o admin -g admin /home/admin/.ssh'
    install -m 0600 "$dir/id_lab.pub" "$mnt/home/admin/.ssh/authorized_keys"
    chroot "$mnt" chown admin:admin /home/admin/.ssh/authorized_keys
    for fs in dev sys proc; do umount "$mnt/$fs"; done
    umount "$mnt" && rmdir "$mnt"
    mv "$base.part" "$base"
}

domain_xml() {  # $1 name: direct kernel boot as the testbed's guests, two NICs
    cat <<XML
<domain type='qemu'>
  <name>$1</name>
  <description>mixed-site test: a lab machine made outside the testbed</description>
  <memory unit='MiB'>1536</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>$IMAGES/tb-lab-vmlinuz</kernel>
    <initrd>$IMAGES/tb-lab-initrd.img</initrd>
    <cmdline>root=/dev/vda rw console=ttyS0 net.ifnames=0 biosdevname=0 quiet systemd.hostname=$1</cmdline>
  </os>
  <features><acpi/><apic/></features>
  <cpu mode='custom' match='exact'><model fallback='allow'>qemu64</model>
    <feature policy='require' name='ssse3'/><feature policy='require' name='sse4.1'/>
    <feature policy='require' name='sse4.2'/></cpu>
  <devices>
    <disk type='file' device='disk'><driver name='qemu' type='raw'/>
      <source file='$IMAGES/$1.raw'/><target dev='vda' bus='virtio'/></disk>
    <interface type='network'><source network='default'/><model type='virtio'/></interface>
    <interface type='network'><source network='$SITE_NET'/><model type='virtio'/></interface>
    <serial type='pty'/><console type='pty'/>
  </devices>
</domain>
XML
}

case $cmd in
base)
    make_key
    make_base
    ;;
create)
    make_key
    $VIRSH net-info default >/dev/null && { $VIRSH net-start default 2>/dev/null || true; }
    if ! $VIRSH net-info $SITE_NET >/dev/null 2>&1; then
        printf '%s\n' "<network><name>$SITE_NET</name><bridge stp='on' delay='0'/>" \
            "<ip address='10.170.0.1' netmask='255.255.255.0'/></network>" > "$dir/site-net.xml"
        $VIRSH net-define "$dir/site-net.xml" >/dev/null
    fi
    $VIRSH net-start $SITE_NET 2>/dev/null || true
    make_base
    cp "$BOX/vmlinuz" $IMAGES/tb-lab-vmlinuz && cp "$BOX/initrd.img" $IMAGES/tb-lab-initrd.img
    for n in $LABS; do
        $VIRSH dominfo "$n" >/dev/null 2>&1 && continue
        cp --sparse=always $IMAGES/tb-lab-base.raw "$IMAGES/$n.raw"
        domain_xml "$n" > "$dir/$n.xml"
        $VIRSH define "$dir/$n.xml" >/dev/null && $VIRSH start "$n" >/dev/null
    done
    for n in $LABS; do
        for _ in $(seq 120); do ssh_lab "$n" true 2>/dev/null && break; sleep 5; done
        echo "$n: $(lab_address "$n"), $(ssh_lab "$n" 'hostname; . /etc/os-release; echo $PRETTY_NAME' | tr '\n' ' ')"
    done
    sed -e "s|@KEY@|$dir/id_lab|" -e "s|@HVKEY@|$dir/id_hv|" -e "s|@LAB1@|$(lab_address lab1)|" -e "s|@LAB2@|$(lab_address lab2)|" \
        "$(dirname "$0")/mixed.yaml.in" > "$dir/mixed.yaml"
    echo "topology: $dir/mixed.yaml"
    ;;
loop)
    command -v sshd >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssh-server >/dev/null
    mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh
    ss -ltn | grep -q '127.0.0.1:22 ' || /usr/sbin/sshd -o ListenAddress=127.0.0.1 \
        -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no
    [ -f "$dir/id_hv" ] || ssh-keygen -q -t ed25519 -N '' -C testbed-loop-hv -f "$dir/id_hv"
    grep -qF "$(cut -d' ' -f2 "$dir/id_hv.pub")" /root/.ssh/authorized_keys 2>/dev/null \
        || cat "$dir/id_hv.pub" >> /root/.ssh/authorized_keys
    chmod 600 /root/.ssh/authorized_keys
    ssh-keygen -F localhost >/dev/null 2>&1 || ssh-keyscan -t ed25519 localhost 2>/dev/null >> /root/.ssh/known_hosts
    virsh -c "qemu+ssh://root@localhost/system?keyfile=$dir/id_hv" version --daemon | grep 'against daemon'
    ;;
listing)
    name=${3:?a lab name}
    ssh_lab "$name" "sudo find / -xdev \( -path /proc -o -path /sys -o -path /run -o -path /tmp -o -path /var/tmp \
        -o -path /var/log -o -path /var/cache -o -path /var/lib/apt/lists -o -path /var/lib/systemd \
        -o -path /var/lib/dhcp -o -path /var/lib/sudo \) -prune -o -printf '%p %s %m %u\n'" | sort
    ;;
destroy)
    for n in $LABS; do
        $VIRSH destroy "$n" >/dev/null 2>&1 || true
        $VIRSH undefine "$n" >/dev/null 2>&1 || true
        rm -f "$IMAGES/$n.raw"
    done
    $VIRSH net-destroy $SITE_NET >/dev/null 2>&1 || true
    $VIRSH net-undefine $SITE_NET >/dev/null 2>&1 || true
    rm -f $IMAGES/tb-lab-base.raw $IMAGES/tb-lab-vmlinuz $IMAGES/tb-lab-initrd.img
    ;;
*) echo "lab-hosts.sh: unknown command $cmd ($COMMANDS)" >&2; exit 2 ;;
esac
