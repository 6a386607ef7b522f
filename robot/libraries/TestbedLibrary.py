"""Robot Framework keywords, thin over the `testbed` package."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from robot.api import logger  # noqa: E402
from robot.api.deco import keyword, library  # noqa: E402

from testbed import health, topology  # noqa: E402
from testbed.condor import Pool, submit_description  # noqa: E402
from testbed.ssh import SSH  # noqa: E402
from testbed.storage import Storage  # noqa: E402


@library(scope="SUITE", auto_keywords=False)
class TestbedLibrary:
    def __init__(self, topology_name=None):
        self.topo = topology.load(topology_name or os.environ.get("TESTBED_TOPOLOGY", "default"))
        self.ssh = SSH(self.topo)
        self.pool = Pool(self.topo, self.ssh)
        self.storage = Storage(self.topo, self.ssh)

    @keyword
    def site_should_be_healthy(self, timeout=600):
        report = health.wait_healthy(self.topo, self.ssh, timeout=float(timeout), echo=logger.console)
        logger.info(health.format_report(report))
        return report

    @keyword
    def run_on_host(self, host, command):
        return self.ssh.run(host, command).stdout

    @keyword
    def submit_sleep_jobs(self, count=1, seconds=5, requirements=None):
        desc = submit_description("/bin/sleep", str(seconds), count=int(count), requirements=requirements)
        cluster = self.pool.submit(desc, f"/home/vagrant/jobs/sleep-{os.getpid()}")
        logger.info(f"submitted cluster {cluster}: {count} x sleep {seconds}")
        return cluster

    @keyword
    def wait_for_jobs(self, cluster, count=1, timeout=600):
        done = self.pool.wait(int(cluster), int(count), timeout=float(timeout))
        return done

    @keyword
    def jobs_should_have_run_on_role(self, cluster, role):
        ads = self.pool.jobs(int(cluster), ["ClusterId", "ProcId", "LastRemoteHost", "JobStatus"])
        hosts = {h.name for h in self.topo.with_role(role)}
        for ad in ads:
            where = str(ad.get("LastRemoteHost", "")).split("@")[-1].split(".")[0]
            if where not in hosts:
                raise AssertionError(f"job {cluster}.{ad['ProcId']} ran on {where!r}, not on a {role} host")
        return ads

    @keyword
    def startds_should_be_reached_through_ccb(self):
        out = self.ssh.run(self.pool.submit_host, "condor_status -startd -af Machine MyAddress").stdout
        lines = [l for l in out.splitlines() if l.strip()]
        workers = [l for l in lines if l.split(".")[0].split()[0] in {h.name for h in self.topo.with_role("worker")}]
        if not workers:
            raise AssertionError("no worker startds in the collector")
        missing = [l for l in workers if "CCBID" not in l]
        if missing:
            raise AssertionError(f"{len(missing)} worker startd ads without a CCB contact: {missing[0][:160]}")
        return len(workers)

    @keyword
    def active_central_manager(self):
        return self.pool.active_cm()

    @keyword
    def kill_central_manager(self, host):
        self.pool.kill_cm(host)

    @keyword
    def restart_central_manager(self, host):
        self.pool.restart_cm(host)

    @keyword
    def negotiator_should_move_to(self, host, timeout=300):
        seconds = self.pool.wait_negotiator_on(host, timeout=float(timeout))
        logger.console(f"  negotiator active on {host} after {seconds:.0f} s")
        return seconds

    @keyword
    def other_central_manager(self, host):
        others = [h.name for h in self.topo.with_role("cm") if h.name != host]
        return others[0]

    @keyword
    def raid_should_be(self, level, members):
        info = self.storage.raid()
        want = f"raid{int(level)}"
        if info["level"] != want or len(info["members"]) != int(members) or info["degraded"] != "0" \
                or info["state"] not in ("clean", "active", "active-idle"):
            raise AssertionError(f"md0 is {info}, expected active {want} with {members} members")
        return info

    @keyword
    def planned_raid_members(self):
        return self.storage.dtn.disks.count

    @keyword
    def read_through_caching_proxy_and_check(self, filename):
        expected = self.storage.origin_checksums()[filename]
        endpoint = f"{self.storage.dtn.name}:1096"
        got, seconds = self.storage.read_via(endpoint, f"/data/{filename}")
        if got != expected:
            raise AssertionError(f"{filename} via {endpoint}: adler32 {got}, origin recorded {expected}")
        logger.console(f"  {filename} via caching proxy: adler32 {got} matches origin ({seconds:.1f} s)")
        return got
