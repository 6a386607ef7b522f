import tarfile

from testbed.model import profiles, topology
from testbed.machines import render
from testbed.model.state import TestbedState


def small():
    return topology.load("small"), profiles.load("default")


def files_for(host, profile=None):
    topo, default = small()
    return render.render_host_files(topo, profile or default, topo.hosts[host])


def conf(files):
    """Parse key = value lines of the rendered condor config (last wins, like condor)."""
    out = {}
    for line in files["etc/condor/config.d/50-testbed.conf"].splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def test_every_condor_host_has_security_and_no_kernel_tuning():
    topo, _ = small()
    for name in ("submit", "cm1", "cm2", "worker1", "dtn"):
        c = conf(files_for(name))
        assert c["ENABLE_KERNEL_TUNING"] == "False"
        assert c["TRUST_DOMAIN"] == "small.testbed"
        assert "IDTOKENS" in c["SEC_DEFAULT_AUTHENTICATION_METHODS"]
        assert c["ALLOW_WRITE"] != "*" and "*" not in c["ALLOW_WRITE"].replace("$(", "")
        assert c["NETWORK_INTERFACE"] == topo.hosts[name].site_ip


def test_cm_pair_runs_had_and_replication_over_shared_port():
    c = conf(files_for("cm1"))
    assert c["CONDOR_HOST"] == "cm1, cm2"
    assert c["HAD_LIST"] == "cm1:9618, cm2:9618" == c["REPLICATION_LIST"]
    assert c["MASTER_NEGOTIATOR_CONTROLLER"] == "HAD"
    assert c["HAD_USE_SHARED_PORT"] == c["REPLICATION_USE_SHARED_PORT"] == "TRUE"
    text = files_for("cm1")["etc/condor/config.d/50-testbed.conf"]
    assert "DAEMON_LIST = $(DAEMON_LIST) COLLECTOR NEGOTIATOR HAD REPLICATION" in text


def test_worker_has_k_startds_with_m_static_slots_and_both_ccbs():
    text = files_for("worker1")["etc/condor/config.d/50-testbed.conf"]
    c = conf(files_for("worker1"))
    assert c["CCB_ADDRESS"] == "cm1:9618, cm2:9618"
    assert c["NUM_SLOTS_TYPE_1"] == "8"
    for n in ("STARTD1", "STARTD2"):
        assert f"DC_DAEMON_LIST = + {n}" in text
        assert f"{n}.EXECUTE = $(EXECUTE)/{n.lower()}" in text
    assert "STARTD3" not in text


def test_default_topology_uses_dedicated_ccb_hosts():
    topo = topology.load("default")
    files = render.render_host_files(topo, profiles.load("default"), topo.hosts["worker1"])
    assert "CCB_ADDRESS = ccb1:9618, ccb2:9618" in files["etc/condor/config.d/50-testbed.conf"]
    ccb = render.render_host_files(topo, profiles.load("default"), topo.hosts["ccb1"])
    assert "DAEMON_LIST = $(DAEMON_LIST) COLLECTOR" in ccb["etc/condor/config.d/50-testbed.conf"]


def test_profile_knobs_land_in_their_own_files():
    tuned = profiles.load("wan-tuned")
    files = files_for("submit", tuned)
    assert "net.core.rmem_max = 12582912" in files["etc/sysctl.d/90-testbed-profile.conf"]
    assert "MAX_CONCURRENT_DOWNLOADS = 100" in files["etc/condor/config.d/60-testbed-profile.conf"]
    dtn = files_for("dtn", profiles.load("raid-stripe-32768"))
    assert "TB_MD_STRIPE_CACHE_SIZE=32768" in dtn["etc/testbed/host.env"]


def test_xrootd_dtn_config_has_four_instances_and_cache_knobs():
    cfg = files_for("dtn")["etc/xrootd/dtn.cfg"]
    for name, port in (("redir", 1094), ("data", 1095), ("xcache", 1096), ("direct", 1097)):
        assert f"named {name}" in cfg and f"xrd.port    {port}" in cfg
    assert "pss.origin  submit:1094" in cfg  # small: the submit host is the origin
    assert "pfc.ram       1g" in cfg and "oss.localroot /raid/xcache" in cfg
    origin = files_for("submit")["etc/xrootd/xrootd-origin.cfg"]
    assert "all.export    /data r/o" in origin


def test_hosts_file_lists_every_vm():
    hosts = files_for("cm1")["etc/hosts"]
    assert "10.160.0.14 dtn.small.testbed dtn" in hosts
    assert "127.0.1.1" not in hosts


def test_write_all_makes_bundles_with_secrets_and_scripts(tmp_path):
    topo, default = small()
    state = TestbedState("small", root=tmp_path).ensure_secrets()
    bundles = render.write_all(state, topo, default)
    assert set(bundles) == set(topo.hosts)
    with tarfile.open(bundles["dtn"]) as tar:
        names = tar.getnames()
    assert "./secrets/pool-password" in names and "./provision/dtn.sh" in names
    assert "./files/etc/xrootd/dtn.cfg" in names
    # the same testbed keeps its secrets; a new one gets new ones
    first = state.pool_password.read_text()
    assert TestbedState("small", root=tmp_path).ensure_secrets().pool_password.read_text() == first
    assert TestbedState("other", root=tmp_path).ensure_secrets().pool_password.read_text() != first
    assert oct(state.pool_password.stat().st_mode & 0o777) == "0o600"


def test_host_env_carries_the_site_address_for_provisioning_to_check():
    topo = topology.load("small")
    env = render.render_host_files(topo, profiles.load("default"), topo.hosts["dtn"])["etc/testbed/host.env"]
    assert f"TB_SITE_ADDRESS={topo.hosts['dtn'].site_ip}/24" in env


def test_tcg_guests_get_longer_network_timeouts_and_kvm_stock_ones():
    topo = topology.load("small")
    host = topo.hosts["submit"]
    tcg = render.render_host_files(topo, profiles.load("default"), host, "tcg")
    kvm = render.render_host_files(topo, profiles.load("default"), host, "kvm")
    assert "TIMEOUT_MULTIPLIER = 3" in tcg["etc/condor/config.d/50-testbed.conf"]
    assert "TIMEOUT_MULTIPLIER" not in kvm["etc/condor/config.d/50-testbed.conf"]


def test_a_restored_snapshots_clock_step_does_not_restart_the_daemons():
    """A master restarts all its daemons when its clock jumps more than MAX_TIME_SKIP
    (default 1200 s); a restore steps every guest's clock by the snapshot's age."""
    topo = topology.load("default")
    for host in topo.hosts.values():
        if not render.is_condor_host(host):
            continue
        conf = render.render_host_files(topo, profiles.load("default"), host, "tcg")[
            "etc/condor/config.d/50-testbed.conf"]
        skip = [int(l.split("=")[1]) for l in conf.splitlines() if l.startswith("MAX_TIME_SKIP")]
        assert len(skip) == 1 and 365 * 86400 <= skip[0] < 2 ** 31, host.name


def test_negotiator_spreads_matches_over_startds_not_by_kflops():
    topo = topology.load("default")
    conf = render.render_host_files(topo, profiles.load("default"), topo.hosts["cm1"])[
        "etc/condor/config.d/50-testbed.conf"]
    rank = [l for l in conf.splitlines() if l.startswith("NEGOTIATOR_POST_JOB_RANK")]
    assert len(rank) == 1 and "SlotID" in rank[0] and "KFlops" not in rank[0]


def test_the_negotiator_publishes_its_cycles_as_often_as_it_runs_them():
    """Its ad (LastNegotiationCycle*) reaches the collector only every
    NEGOTIATOR_UPDATE_INTERVAL; at the default 300 s E5 waited minutes for cycles long run."""
    c = conf(files_for("cm1"))
    assert c["NEGOTIATOR_UPDATE_INTERVAL"] == "$(NEGOTIATOR_INTERVAL)"
    assert int(c["NEGOTIATOR_INTERVAL"]) <= 60


def test_workers_run_no_preen_that_would_delete_the_per_startd_execute_dirs():
    """condor_preen removes what it does not know from $(EXECUTE), the startdN/ directories
    included (seen on `default` an hour after start); an empty PREEN keeps the master from
    starting it. Hosts without per-startd directories keep HTCondor's default."""
    assert conf(files_for("worker1"))["PREEN"] == ""
    assert "PREEN" not in conf(files_for("cm1")) and "PREEN" not in conf(files_for("dtn"))


def test_worker_slots_memory_is_nominal_and_sets_no_cgroup_limit():
    """A sleeper slot's 64 MB is a share of an oversubscribed VM: no hard cgroup limit from it
    (a job's mapped libraries would be reclaimed at 64 MB). The DTN keeps HTCondor's default."""
    c = conf(files_for("worker1"))
    assert c["SLOT_TYPE_1"] == "cpus=1, mem=64" and c["CGROUP_MEMORY_LIMIT_POLICY"] == "none"
    assert "CGROUP_MEMORY_LIMIT_POLICY" not in conf(files_for("dtn"))
