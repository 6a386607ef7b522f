"""provision/hypervisor/site-link.sh runs for real on a fake hypervisor: stand-ins for ip,
bridge and virsh that keep the links, the forwarding entries and the networks in files.
A plan changes nothing; `up` makes the VXLAN port the rendered settings say, a second `up`
changes nothing, changed settings change only what differs; `down` removes the port."""
import subprocess

import pytest

from testbed.machines import fabric
from tests.hypervisor_sites import two

STUBS = {
    "ip": r'''
case "$*" in
  "-d -o link show dev "*)
    [ -s "$FAKE/link" ] || exit 1
    . "$FAKE/link"
    flags="<BROADCAST,MULTICAST${up:+,UP,LOWER_UP}>"
    echo "9: $name: $flags mtu $mtu qdisc noqueue ${master:+master $master }state UNKNOWN mode DEFAULT group default qlen 1000\    link/ether 0a:0b:0c:0d:0e:0f brd ff:ff:ff:ff:ff:ff promiscuity 1 \    vxlan id $id local $local ${dev:+dev $dev }srcport 0 0 dstport $port ttl auto ageing 300 udpcsum" ;;
  "link add "*)
    echo "ip $*" >> "$FAKE/log"
    dev=""; [ "${12:-}" = dev ] && dev=${13}
    printf 'name=%s\nid=%s\nlocal=%s\nport=%s\ndev=%s\nmtu=1500\nmaster=\nup=\n' "$3" "$7" "$9" "${11}" "$dev" > "$FAKE/link" ;;
  "link del dev "*)
    echo "ip $*" >> "$FAKE/log"; : > "$FAKE/link"; : > "$FAKE/fdb" ;;
  "link set dev "*)
    echo "ip $*" >> "$FAKE/log"
    printf 'mtu=%s\nmaster=%s\nup=1\n' "$6" "$8" >> "$FAKE/link" ;;
  *) echo "ip stub: $*" >&2; exit 2 ;;
esac
''',
    "bridge": r'''
case "$1 $2" in
  "fdb show") [ -s "$FAKE/link" ] || exit 1; sed 's/^/00:00:00:00:00:00 dst /; s/$/ self permanent/' "$FAKE/fdb" ;;
  "fdb append") echo "bridge $*" >> "$FAKE/log"; echo "$7" >> "$FAKE/fdb" ;;
  "fdb del") echo "bridge $*" >> "$FAKE/log"; grep -vx "$7" "$FAKE/fdb" > "$FAKE/fdb.new" || true
    mv "$FAKE/fdb.new" "$FAKE/fdb" ;;
esac
''',
    "virsh": r'''
[ "$4" = net-info ] && [ -e "$FAKE/network" ] || exit 1
printf 'Name:           %s\nActive:         yes\nBridge:         virbr7\n' "$5"
''',
}


class Hypervisor:
    def __init__(self, tmp, network=True, tools=("ip", "bridge", "virsh")):
        self.fake, self.bin = tmp / "fake", tmp / "bin"
        self.fake.mkdir()
        self.bin.mkdir()
        for name in ("link", "fdb", "log"):
            (self.fake / name).write_text("")
        if network:
            (self.fake / "network").write_text("")
        for name in tools:
            path = self.bin / name
            path.write_text("#!/bin/bash\nset -u\n" + STUBS[name])
            path.chmod(0o755)
        self.env = {"PATH": f"{self.bin}:/usr/bin:/bin", "FAKE": str(self.fake), "LC_ALL": "C"}

    def run(self, topo, name, mode):
        stdin = fabric.link_input(topo, topo.hypervisors[name])
        return subprocess.run(["bash", "-s", mode], input=stdin, env=self.env, capture_output=True,
                              text=True, timeout=60)

    def log(self):
        return (self.fake / "log").read_text().splitlines()

    def peers(self):
        return (self.fake / "fdb").read_text().split()


@pytest.fixture
def topo():
    return two()


def test_plan_lists_the_port_and_changes_nothing(tmp_path, topo):
    hv = Hypervisor(tmp_path, network=False)
    res = hv.run(topo, "here", "plan")
    assert res.returncode == 0, res.stderr
    vni = fabric.vni(topo)
    assert res.stdout.splitlines() == [
        f"would\tip link add tbvx-two type vxlan id {vni} local 192.0.2.1 dstport 4789 dev eth0",
        "would\tbridge fdb append 00:00:00:00:00:00 dev tbvx-two dst 192.0.2.2",
        "would\tip link set dev tbvx-two mtu 1450 master <the bridge of tb-two-site> up"]
    assert hv.log() == []


def test_up_needs_the_network_then_makes_the_port_once(tmp_path, topo):
    hv = Hypervisor(tmp_path, network=False)
    res = hv.run(topo, "lab2", "up")
    assert res.returncode == 3 and "no libvirt network tb-two-site here" in res.stdout and hv.log() == []
    (hv.fake / "network").write_text("")
    assert hv.run(topo, "lab2", "up").returncode == 0
    assert hv.log() == [f"ip link add tbvx-two type vxlan id {fabric.vni(topo)} local 192.0.2.2 dstport 4789 dev eth1",
                        "bridge fdb append 00:00:00:00:00:00 dev tbvx-two dst 192.0.2.1",
                        "ip link set dev tbvx-two mtu 1450 master virbr7 up"]
    assert hv.peers() == ["192.0.2.1"]
    again = hv.run(topo, "lab2", "up")
    assert again.returncode == 0 and len(hv.log()) == 3
    assert hv.run(topo, "lab2", "plan").stdout == ""


def test_changed_settings_change_only_what_differs(tmp_path, topo):
    hv = Hypervisor(tmp_path)
    assert hv.run(topo, "here", "up").returncode == 0
    done = len(hv.log())
    # a third hypervisor: one more forwarding entry, the port stays
    def third(d):
        d["hypervisors"]["lab3"] = {"uri": "qemu+ssh://root@192.0.2.3/system"}
        d["hosts"]["cm1"]["hypervisor"] = "lab3"
    assert hv.run(two(third), "here", "up").returncode == 0
    assert hv.log()[done:] == ["bridge fdb append 00:00:00:00:00:00 dev tbvx-two dst 192.0.2.3"]
    # lab2 gone again: its entry goes
    done = len(hv.log())
    assert hv.run(two(lambda d: d["hypervisors"]["lab2"].update(address="192.0.2.22")), "here", "up").returncode == 0
    assert hv.log()[done:] == ["bridge fdb append 00:00:00:00:00:00 dev tbvx-two dst 192.0.2.22",
                               "bridge fdb del 00:00:00:00:00:00 dev tbvx-two dst 192.0.2.2",
                               "bridge fdb del 00:00:00:00:00:00 dev tbvx-two dst 192.0.2.3"]
    # another underlying NIC: the port is made again
    done = len(hv.log())
    assert hv.run(two(lambda d: d["hypervisors"]["here"].update(site_interface="bond0")), "here", "up").returncode == 0
    assert hv.log()[done] == "ip link del dev tbvx-two"
    assert hv.log()[done + 1].endswith("dstport 4789 dev bond0") and hv.peers() == ["192.0.2.2"]


def test_down_removes_the_port_and_a_second_down_does_nothing(tmp_path, topo):
    hv = Hypervisor(tmp_path)
    assert hv.run(topo, "here", "up").returncode == 0
    res = hv.run(topo, "here", "down")
    assert res.returncode == 0 and res.stdout == "done\tremoved tbvx-two\n"
    assert hv.log()[-1] == "ip link del dev tbvx-two"
    again = hv.run(topo, "here", "down")
    assert again.returncode == 0 and again.stdout == "" and hv.log()[-1] == "ip link del dev tbvx-two"


def test_a_missing_tool_is_named(tmp_path, topo):
    hv = Hypervisor(tmp_path, tools=("ip", "virsh"))
    res = hv.run(topo, "here", "up")
    assert res.returncode == 3 and res.stdout == "missing\tbridge\n" and hv.log() == []
