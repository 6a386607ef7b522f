"""provision/existing/prepare.sh and remove.sh run for real, on a fake host: a folder as its
root (TB_ROOT) and stand-ins for dpkg-query, apt-get, getent, useradd, systemctl, sysctl and
ip that keep their state in files. A plan changes nothing; a provisioning records before it
changes; `down` leaves the host exactly as it was found, and refuses a host not its own."""
import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from testbed.machines import ledger, render
from testbed.model import constants as c, profiles, topology

OWNER = "controller:/work/checkout"
STUBS = {
    "dpkg-query": r'''
db=$FAKE/dpkg
if [ "$3" = '${Status}' ]; then grep -qx -- "$4" "$db" && printf 'install ok installed' && exit 0; exit 1; fi
cat "$db"
''',
    "apt-get": r'''
sim=0 verb="" pkgs=()
for a in "$@"; do case $a in -s) sim=1 ;; -*) ;; *) if [ -z "$verb" ]; then verb=$a; else pkgs+=("$a"); fi ;; esac; done
echo "$verb ${pkgs[*]} sim=$sim" >> "$FAKE/apt.log"
case $verb in
  update) ;;
  install)
    all=("${pkgs[@]}"); printf '%s\n' "${pkgs[@]}" | grep -qx condor && all+=(libcondor-dep)
    if [ $sim = 1 ]; then for p in "${all[@]}"; do echo "Inst $p (1.0 Debian:13)"; done; exit 0; fi
    [ -e "$TB_ROOT/usr/sbin/policy-rc.d" ] || { echo "no policy-rc.d" >&2; exit 1; }
    for p in "${all[@]}"; do grep -qx "$p" "$FAKE/dpkg" || echo "$p" >> "$FAKE/dpkg"; done
    if printf '%s\n' "${pkgs[@]}" | grep -qx condor; then
      mkdir -p "$TB_ROOT/etc/condor/config.d" "$TB_ROOT/var/lib/condor/execute" "$TB_ROOT/var/log/condor"
      echo condor >> "$FAKE/passwd"; echo condor >> "$FAKE/group"; echo condor.service >> "$FAKE/enabled"
    fi ;;
  purge)
    if [ $sim = 1 ]; then
      for p in "${pkgs[@]}"; do echo "Purg $p"; done
      if grep -qx needs-condor "$FAKE/dpkg" && printf '%s\n' "${pkgs[@]}" | grep -qx condor; then echo "Purg needs-condor"; fi
      exit 0
    fi
    for p in "${pkgs[@]}"; do sed -i "/^$p\$/d" "$FAKE/dpkg"; done ;;
esac
''',
    "getent": r'''
f=$FAKE/$1
if [ -n "${2:-}" ]; then grep -qx -- "$2" "$f" || exit 2; echo "$2:x:1000:1000::/home/$2:/bin/bash"
else sed 's|$|:x:1:1::/:/bin/false|' "$f"; fi
''',
    "useradd": 'n=${@: -1}; echo "$n" >> "$FAKE/passwd"; echo "$n" >> "$FAKE/group"; mkdir -p "$TB_ROOT/home/$n"',
    "userdel": 'sed -i "/^$1\\$/d" "$FAKE/passwd"',
    "groupdel": 'sed -i "/^$1\\$/d" "$FAKE/group"',
    "systemctl": r'''
u=${@: -1}
case $1 in
  is-enabled) grep -qx "$u" "$FAKE/enabled" && { echo enabled; exit 0; }; echo disabled; exit 1 ;;
  is-active) grep -qx "$u" "$FAKE/active" ;;
  disable) sed -i "/^$u\$/d" "$FAKE/enabled" "$FAKE/active" ;;
  daemon-reload) ;;
esac
''',
    "sysctl": r'''
if [ "$1" = -n ]; then v=$(grep "^$2=" "$FAKE/sysctl" | cut -d= -f2-); [ -n "$v" ] || exit 255; printf '%s\n' "$v"; exit 0; fi
kv=${@: -1}; k=${kv%%=*}; sed -i "/^$k=/d" "$FAKE/sysctl"; echo "$kv" >> "$FAKE/sysctl"
''',
    "ip": r'''
case "$*" in
  "-o link show dev "*) st=$(awk -v i="${@: -1}" '$1 == i {print $2}' "$FAKE/links"); [ -n "$st" ] || exit 1
    if [ "$st" = UP ]; then echo "2: ${@: -1}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500"
    else echo "2: ${@: -1}: <BROADCAST,MULTICAST> mtu 1500"; fi ;;
  "-o -4 addr show dev "*) awk -v i="${@: -1}" '$1 == i {print "3: " i "    inet " $2 " scope global " i}' "$FAKE/addrs" ;;
  "addr add "*) echo "$5 $3" >> "$FAKE/addrs" ;;
  "addr del "*) grep -vx "$5 $3" "$FAKE/addrs" > "$FAKE/addrs.new" || true; mv "$FAKE/addrs.new" "$FAKE/addrs" ;;
  "link set "*) awk -v i="$3" -v s="$4" '$1 == i {$2 = toupper(s)} {print}' "$FAKE/links" > "$FAKE/links.new"
    mv "$FAKE/links.new" "$FAKE/links" ;;
esac
''',
}
SYSCTL = {"net.core.wmem_max": "212992", "net.core.rmem_max": "212992", "net.ipv4.tcp_rmem": "4096\t131072\t6291456",
          "net.ipv4.tcp_wmem": "4096\t16384\t4194304", "net.core.netdev_max_backlog": "1000",
          "net.ipv4.tcp_mtu_probing": "0"}
USER_SYSCTL_FILE = "# the admin's own\nvm.swappiness = 10\n"
HOSTS = "127.0.0.1 localhost\n192.168.1.1 router\n"


class Host:
    """A fake existing host under `tmp`: root/ is its /, fake/ its packages, accounts and kernel."""

    def __init__(self, tmp, packages=("bash", "iproute2"), condor=False):
        self.root, self.fake, self.bin = tmp / "root", tmp / "fake", tmp / "bin"
        for d in ("etc/sysctl.d", "home/admin", "var/lib", "var/log", "usr/sbin", "srv", "run", "tmp"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        (self.root / "etc/hosts").write_text(HOSTS)
        (self.root / "etc/motd").write_text("welcome\n")
        (self.root / "etc/sysctl.d/90-testbed-profile.conf").write_text(USER_SYSCTL_FILE)
        self.fake.mkdir()
        (self.fake / "dpkg").write_text("".join(f"{p}\n" for p in packages) + ("condor\n" if condor else ""))
        (self.fake / "passwd").write_text("root\nadmin\n")
        (self.fake / "group").write_text("root\nadmin\n")
        (self.fake / "sysctl").write_text("".join(f"{k}={v}\n" for k, v in SYSCTL.items()))
        (self.fake / "links").write_text("ens4 DOWN\n")
        for name in ("addrs", "enabled", "active", "apt.log"):
            (self.fake / name).write_text("")
        self.bin.mkdir()
        for name, body in STUBS.items():
            path = self.bin / name
            path.write_text("#!/bin/bash\nset -u\n" + body)
            path.chmod(0o755)
        self.env = {"PATH": f"{self.bin}:/usr/bin:/bin", "TB_ROOT": str(self.root), "FAKE": str(self.fake),
                    "HOME": str(tmp), "LC_ALL": "C"}

    def run(self, script, *args):
        return subprocess.run(["bash", str(ledger.SCRIPTS / script), *map(str, args)], env=self.env,
                              capture_output=True, text=True, timeout=60)

    def snapshot(self):
        """Every file of the host (its root and its fake state, apt's log aside) -> its digest."""
        out = {}
        for base in (self.root, self.fake):
            for p in sorted(base.rglob("*")):
                if p.name != "apt.log":
                    out[str(p.relative_to(base.parent))] = hashlib.sha256(p.read_bytes()).hexdigest() \
                        if p.is_file() else "dir"
        return out

    def ledger(self):
        path = self.root / c.TESTBED_LEDGER.lstrip("/")
        return [line.split("\t") for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def site_topology(tmp_path):
    key = tmp_path / "k"
    key.write_text("x")
    data = {"name": "mixed", "networks": {"site": "10.170.0.0/24", "management": "192.168.170.0/24"},
            "hosts": {"submit": {"roles": ["submit"]}, "cm1": {"roles": ["cm", "ccb"]},
                      "worker1": {"roles": ["worker"]},
                      "lab1": {"roles": ["worker"], "existing": {"address": "192.168.1.20", "user": "admin",
                                                                  "key": str(key), "interface": "ens4"}}}}
    return topology.parse(data, tmp_path / "mixed.yaml")


@pytest.fixture
def bundle(site_topology, tmp_path, monkeypatch):
    """(changes file, marker file, {path: text} the role scripts install) for lab1 under wan-tuned."""
    monkeypatch.setattr(ledger, "owner", lambda: OWNER)
    prof = profiles.load("wan-tuned")
    host = site_topology.hosts["lab1"]
    files = render.render_host_files(site_topology, prof, host)
    changes = tmp_path / "changes"
    changes.write_text(render.existing_changes(site_topology, prof, host, files))
    marker = tmp_path / "installed-by"
    marker.write_text(files["etc/testbed/installed-by"])
    return changes, marker, files, prof.for_host(host.roles, "sysctl")


def role_scripts(host, files, sysctls):
    """What provision/apply.sh and the role scripts do after prepare.sh, as far as the host sees."""
    for rel, text in files.items():
        if rel != "etc/testbed/hosts":
            (host.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (host.root / rel).write_text(text)
    hosts = host.root / "etc/hosts"
    hosts.write_text(hosts.read_text() + files["etc/testbed/hosts"])
    (host.root / "etc/condor/passwords.d").mkdir(parents=True)
    (host.root / "etc/condor/passwords.d/POOL").write_text("key")
    (host.root / "home/vagrant/.condor/tokens.d").mkdir(parents=True)
    (host.root / "var/lib/condor/execute/startd1").mkdir(parents=True)
    (host.root / "var/lib/testbed/provision").mkdir(parents=True)
    for key, value in sysctls.items():
        subprocess.run(["sysctl", "-q", "-w", f"{key}={value}"], env=host.env, check=True)
    for unit in ("enabled", "active"):
        (host.fake / unit).write_text("condor.service\n")


def test_the_plan_command_reads_its_changes_from_a_pipe_as_ssh_gives_them(tmp_path, bundle):
    """`up --dry-run` sends the changes on stdin over SSH, a pipe: prepare.sh reads the list
    more than once, so the command must keep a copy (with /dev/stdin it printed nothing)."""
    changes, _marker, _files, _sysctls = bundle
    host = Host(tmp_path)
    before = host.snapshot()
    res = subprocess.run(["bash", "-c", ledger.plan_command()], input=Path(changes).read_bytes(),
                         env=host.env, capture_output=True)
    assert res.returncode == 0, res.stderr
    assert host.snapshot() == before
    lines = ledger.describe_plan(res.stdout.decode())
    assert "create /etc/testbed/host.env" in lines and "enable and start condor.service" in lines, lines


def test_a_plan_lists_the_changes_and_changes_nothing(tmp_path, bundle):
    changes, _marker, _files, sysctls = bundle
    host = Host(tmp_path)
    before = host.snapshot()
    res = host.run("prepare.sh", "plan", changes)
    assert res.returncode == 0, res.stderr
    assert host.snapshot() == before
    lines = ledger.describe_plan(res.stdout)
    for words in ("create /var/lib/testbed", "create /etc/testbed/host.env",
                  "create /etc/condor/config.d/50-testbed.conf", "let its packages create /etc/condor",
                  "replace /etc/sysctl.d/90-testbed-profile.conf (the original is kept and put back by down)",
                  "create user vagrant", "add site address 10.170.0.13/24 to ens4",
                  f"set net.core.wmem_max: 212992 -> {sysctls['net.core.wmem_max']}",
                  "enable and start condor.service", "install their dependencies libcondor-dep"):
        assert words in lines, (words, lines)
    assert any(line.startswith("add a block of site host names to /etc/hosts (from '# BEGIN") for line in lines)
    assert any(line.startswith("install packages ") and "condor" in line and "iproute2" not in line for line in lines)
    apt = (host.fake / "apt.log").read_text().splitlines()
    assert apt and all(line.endswith("sim=1") for line in apt)            # apt only simulated


def test_provisioning_records_first_and_down_leaves_the_host_as_it_was_found(tmp_path, bundle):
    changes, marker, files, sysctls = bundle
    host = Host(tmp_path)
    before = host.snapshot()
    res = host.run("prepare.sh", "apply", changes, marker)
    assert res.returncode == 0, res.stderr
    entries = host.ledger()
    for entry in (["path", "/var/lib/testbed"], ["path", "/etc/testbed"], ["path", "/etc/condor"],
                  ["backup", "/etc/sysctl.d/90-testbed-profile.conf"], ["package", "condor"],
                  ["package", "libcondor-dep"], ["user", "condor"], ["group", "condor"], ["user", "vagrant"],
                  ["path", "/home/vagrant"], ["address", "ens4", "10.170.0.13/24"], ["link", "ens4"],
                  ["sysctl", "net.ipv4.tcp_rmem", "4096 131072 6291456"], ["block", "/etc/hosts"],
                  ["service", "condor.service"]):
        assert entry in entries, entry
    assert ["package", "iproute2"] not in entries                       # it was there before
    assert not any(e[0] == "path" and e[1] in ("/etc", "/home", "/var/lib") for e in entries)
    backup = host.root / c.TESTBED_BACKUP_DIR.lstrip("/") / "etc/sysctl.d/90-testbed-profile.conf"
    assert backup.read_text() == USER_SYSCTL_FILE
    assert (host.root / "etc/testbed/installed-by").read_text() == marker.read_text()
    assert (host.fake / "addrs").read_text() == "ens4 10.170.0.13/24\n"
    assert not (host.root / "usr/sbin/policy-rc.d").exists()             # only while apt ran

    role_scripts(host, files, sysctls)
    again = host.run("prepare.sh", "apply", changes, marker)              # a second provisioning
    assert again.returncode == 0, again.stderr
    assert host.ledger() == entries and backup.read_text() == USER_SYSCTL_FILE

    (host.root / "etc/motd").write_text("welcome\n")                     # the admin's own file, untouched
    res = host.run("remove.sh", OWNER, c.HOSTS_BLOCK_BEGIN, c.HOSTS_BLOCK_END)
    assert res.returncode == 0, res.stderr
    done, kept = ledger.describe_removal(res.stdout)
    assert kept == []
    assert "stopped and disabled condor.service" in done and "put back the original /etc/sysctl.d/90-testbed-profile.conf" in done
    assert "removed the testbed's block from /etc/hosts" in done and "removed /etc/condor" in done
    assert any(d.startswith("purged packages ") and "libcondor-dep" in d for d in done)
    after = host.snapshot()
    # the kernel's multi-value settings come back as sysctl -w writes them (spaces, not tabs)
    sysctl_now = dict(line.split("=", 1) for line in (host.fake / "sysctl").read_text().splitlines())
    assert {k: " ".join(v.split()) for k, v in sysctl_now.items()} == {k: " ".join(v.split()) for k, v in SYSCTL.items()}
    assert {k: v for k, v in after.items() if not k.endswith("sysctl")} == \
        {k: v for k, v in before.items() if not k.endswith("sysctl")}


def test_down_refuses_a_host_another_checkout_owns_and_changes_nothing(tmp_path, bundle):
    changes, marker, _files, _s = bundle
    host = Host(tmp_path)
    assert host.run("prepare.sh", "apply", changes, marker).returncode == 0
    before = host.snapshot()
    res = host.run("remove.sh", "elsewhere:/srv/tb", c.HOSTS_BLOCK_BEGIN, c.HOSTS_BLOCK_END)
    assert res.returncode == ledger.REFUSED
    assert ledger.conflicts(res.stdout) == [f"claimed by topology mixed of {OWNER}"]
    assert host.snapshot() == before


def test_provisioning_refuses_another_topologys_host_and_htcondor_it_did_not_install(tmp_path, bundle):
    changes, marker, _files, _s = bundle
    host = Host(tmp_path / "a")
    (host.root / "etc/testbed").mkdir()
    (host.root / "etc/testbed/installed-by").write_text("topology=other\nowner=elsewhere:/srv/tb\n")
    before = host.snapshot()
    res = host.run("prepare.sh", "apply", changes, marker)
    assert res.returncode == ledger.REFUSED and host.snapshot() == before
    assert ledger.conflicts(res.stdout) == ["claimed by topology other of elsewhere:/srv/tb"]

    host = Host(tmp_path / "b", condor=True)
    before = host.snapshot()
    for mode in ("plan", "apply"):
        res = host.run("prepare.sh", mode, changes, marker)
        assert res.returncode == ledger.REFUSED and host.snapshot() == before
        assert ledger.conflicts(res.stdout) == [
            "HTCondor is installed and the testbed did not install it (no /etc/testbed/installed-by)"]


def test_a_path_a_role_replaces_whole_and_a_missing_interface_are_conflicts(tmp_path):
    host = Host(tmp_path)
    (host.root / "srv/origin").mkdir()
    changes = tmp_path / "changes"
    changes.write_text(f"exclusive\t{c.ORIGIN_DIR}\naddress\teth9\t10.170.0.20/24\n")
    before = host.snapshot()
    res = host.run("prepare.sh", "plan", changes)
    assert res.returncode == ledger.REFUSED and host.snapshot() == before
    assert ledger.conflicts(res.stdout) == [
        "/srv/origin exists and is not the testbed's (provisioning would replace it)",
        "no network interface eth9 (existing.interface)"]


def test_down_keeps_packages_something_installed_since_depends_on(tmp_path, bundle):
    changes, marker, _files, _s = bundle
    host = Host(tmp_path)
    assert host.run("prepare.sh", "apply", changes, marker).returncode == 0
    with open(host.fake / "dpkg", "a") as fh:
        fh.write("needs-condor\n")                                       # the admin installed it since
    res = host.run("remove.sh", OWNER, c.HOSTS_BLOCK_BEGIN, c.HOSTS_BLOCK_END)
    _done, kept = ledger.describe_removal(res.stdout)
    assert any("removing them would also remove needs-condor (installed since)" in k for k in kept)
    assert "condor" in (host.fake / "dpkg").read_text().split()


def test_remove_never_removes_a_protected_folder_even_if_the_ledger_says_so(tmp_path):
    host = Host(tmp_path)
    (host.root / "var/lib/testbed").mkdir(parents=True)
    (host.root / "var/lib/testbed/ledger").write_text("path\t/etc\npath\t/home/../etc\npath\t/srv\n")
    res = host.run("remove.sh", OWNER, c.HOSTS_BLOCK_BEGIN, c.HOSTS_BLOCK_END)
    assert res.returncode == 0, res.stderr
    assert (host.root / "etc/motd").exists() and (host.root / "srv").exists()
    _done, kept = ledger.describe_removal(res.stdout)
    assert sorted(kept) == ["kept path /etc: never removed", "kept path /home/../etc: not a plain path",
                            "kept path /srv: never removed"]


def test_nothing_to_undo_on_a_host_the_testbed_never_touched(tmp_path):
    host = Host(tmp_path)
    before = host.snapshot()
    res = host.run("remove.sh", OWNER, c.HOSTS_BLOCK_BEGIN, c.HOSTS_BLOCK_END)
    assert res.returncode == 0 and host.snapshot() == before
    assert ledger.describe_removal(res.stdout) == (["the testbed installed nothing here"], [])


def test_stubs_shadow_the_real_tools(tmp_path):
    host = Host(tmp_path)
    found = subprocess.run(["bash", "-c", "command -v apt-get sysctl ip systemctl"], env=host.env,
                           capture_output=True, text=True).stdout.split()
    assert all(Path(p).parent == host.bin for p in found) and len(found) == 4
    assert os.access(host.bin / "ip", os.X_OK)
