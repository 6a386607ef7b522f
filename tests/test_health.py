from testbed.services import health
from testbed.model import topology
from testbed.remote.ssh import Result

ADDR = ("<10.160.0.13:9618?CCBID=10.160.0.11:9618%3faddrs%3d10.160.0.11-9618%26alias%3dcm1.small.testbed"
        "%26noUDP%26sock%3dcollector#1%2010.160.0.12:9618%3faddrs%3d10.160.0.12-9618%26sock%3dcollector#1"
        "&PrivNet=worker1.workers.small.testbed&addrs=10.160.0.13-9618&noUDP&sock=startd1_887_fc98>")


def test_ccb_contacts_finds_every_ccb_server():
    assert health.ccb_contacts(ADDR) == ["10.160.0.11:9618", "10.160.0.12:9618"]
    assert health.ccb_contacts("<10.0.0.1:9618?addrs=10.0.0.1-9618>") == []


class FakeSSH:
    """Answers the health probes like a small site would."""

    def __init__(self, topo, broken=()):
        self.topo, self.broken = topo, set(broken)

    def run_many(self, commands, check=False, timeout=None):
        return {h: self.run(h, c) for h, c in commands.items()}

    def run(self, host, command, check=False, timeout=None):
        if host in self.broken:
            return Result(host, 255, "", "ssh: connect to host: No route to host")
        if command.startswith(health.HOST_PROBE):
            t = self.topo.hosts[host]
            procs = {d for r in t.roles for d in health.DAEMONS.get(r, [])}
            lines = ["up=1"] + [f"proc:{d[:15]}=1" for d in procs if not d.startswith(("xrootd", "cmsd"))]
            if host == "cm1":
                lines.append("proc:condor_negotiat=1")
            lines += [f"xrd:{d.replace(':', ':', 1)}=1" for d in procs if d.startswith(("xrootd", "cmsd"))]
            if t.disks:
                lines += ["md_state=clean", "md_level=raid6", "md_disks=6", "md_degraded=0",
                          "md_members=vdb vdc vdd vde vdf vdg ", "raid_mounted=1"]
            if health.POOL_MARK in command:   # the submit host's: the pool and XRootD as well
                lines += [health.POOL_MARK, "had=condor@cm1.small.testbed True",
                          "had=condor@cm2.small.testbed False"]
                for s in range(1, 3):
                    lines.append(f"startd=worker1.small.testbed startd{s}@worker1.small.testbed {ADDR}")
                    for slot in range(1, 9):
                        lines.append(f"slot=worker1.small.testbed slot{slot}@startd{s}@worker1.small.testbed")
                lines.append(health.XROOTD_MARK)
                lines += [f"xrootd:{e}=1" for e in health.xrootd_endpoints(self.topo).values() if e in command]
            return Result(host, 0, "\n".join(lines), "")
        raise AssertionError(f"a health check sent {command[:60]!r} to {host}")


def test_collect_healthy_small_site():
    topo = topology.load("small")
    report = health.collect(topo, FakeSSH(topo))
    assert report["problems"] == []
    assert report["pool"]["slots"] == 16 and report["pool"]["ccb"] == {"cm1": 2, "cm2": 2}
    assert report["pool"]["had"] == {"cm1.small.testbed": True, "cm2.small.testbed": False}
    text = health.format_report(report)
    assert "HAD leader cm1.small.testbed" in text and text.endswith("healthy")


def test_collect_reports_unreachable_host():
    topo = topology.load("small")
    report = health.collect(topo, FakeSSH(topo, broken=["dtn"]))
    assert not report["healthy"]
    assert any(p.startswith("dtn: unreachable") for p in report["problems"])


def test_guest_versions_come_from_the_guests_own_tools():
    import types
    from testbed.services import health as h

    class OneHost:
        def run(self, host, cmd, **_kw):
            assert host == "dtn" and "condor_version" in cmd and "xrootd -v" in cmd
            return types.SimpleNamespace(stdout="condor=23.9.6\nxrootd=v5.8.1\nkernel=6.12.57\nos=Debian GNU/Linux 13 (trixie)\n")
    assert h.guest_versions(OneHost(), "dtn") == {"condor": "23.9.6", "xrootd": "v5.8.1", "kernel": "6.12.57",
                                                 "os": "Debian GNU/Linux 13 (trixie)"}
