"""E5's configuration of the pool for one run: the job tag, extra startds per worker,
the two-tier collector tree (child collectors, the workers' collector list) and the
negotiator's resource-request protocol, each a config.d fragment installed through
`gateway.ConfigFragment` and removed after the row."""
from testbed.model.constants import (E5_CHILD_COLLECTOR_CONF, E5_CHILD_COLLECTOR_PORT, E5_NEGOTIATION_PROTOCOL_CONF,
                                     E5_ROLE_ATTR, E5_STARTDS_CONF, E5_TREE_WORKER_CONF, HTCONDOR_PORT)
from testbed.machines.render import render_run_file
from testbed.remote.poll import wait_for
from testbed.services.gateway import ConfigFragment, Daemons, apply_fragments
from testbed.experiments.e5.parsers import CHILD_COLLECTOR_PREFIX, fresh_slots, sum_ad_updates, update_window

SLEEP_SECONDS = 86400  # sleepers run until the suite removes them


def role_constraint(role):
    """The ClassAd constraint that selects the suite's jobs tagged `role`."""
    return f'{E5_ROLE_ATTR} =?= "{role}"'


# --- more startds per worker for one run ("Uber glideins") ---------------------------------
# A startd's slots change only when it restarts; adding or removing startds of the same
# layout needs a reconfig of the master only.
SLOT_LAYOUT_KNOBS = ("NUM_CPUS", "MEMORY", "NUM_SLOTS_TYPE_1")


def extra_startd_names(host, total):
    """The local names of the startds a run adds to a worker beyond the topology's count
    (each has its own EXECUTE directory, `$(EXECUTE)/<name>`)."""
    return [f"startd{i}" for i in range(host.startds + 1, total + 1)]


def extra_startds_conf(host, total, slots=0):
    """A config fragment running `total` startds on a worker (startds+1..total added, with the
    same names and files as the rendered worker.conf) of `slots` slots each (0: the
    topology's slots_per_startd), or '' when that is the topology's own layout."""
    slots = 0 if slots in (0, host.slots_per_startd) else slots
    if total <= host.startds and not slots:
        return ""
    return render_run_file("e5/startds.conf.j2", host=host, total=max(total, host.startds), slots=slots)


def startds_script(text, execute_dirs=()):
    """Install (or, for '', remove) the extra-startds fragment. The master starts or stops
    the startds of its DAEMON_LIST on a reconfig; when the slot layout changes (the
    fragment's slot knobs differ from the last one's) HTCondor restarts instead. A startd
    whose EXECUTE directory is missing exits at start (status 4) and the master retries it
    forever, so each added startd's directory (`execute_dirs`, names under $(EXECUTE)) is
    made first, as provisioning makes the topology's."""
    return ConfigFragment(None, None, E5_STARTDS_CONF).script(text, make_dirs=execute_dirs,
                                                              restart_on=SLOT_LAYOUT_KNOBS)


def use_startds(ssh, workers, count, slots=0):
    """Run `count` startds of `slots` slots (0: the topology's) on every worker (fragments
    installed at once); {host: conf} of what was installed, {} when the topology already
    runs that layout (then any earlier fragment is removed). AssertionError naming the hosts
    where it failed."""
    extra = {h.name: extra_startds_conf(h, count, slots) for h in workers}
    dirs = {h.name: extra_startd_names(h, count) for h in workers}
    apply_fragments(ssh, {h: startds_script(t, dirs[h]) for h, t in extra.items()}, "adding startds failed on ",
                    error=AssertionError, timeout=300)
    return {h: t for h, t in extra.items() if t}


def restore_startds(ssh, workers):
    """Remove the run's extra startds (the topology's count and slots again)."""
    ssh.run_many({h.name: startds_script("") for h in workers}, timeout=300)


# --- the negotiator's resource-request protocol (section 4.5) -------------------------------
# `batched`: the release's own protocol, lists of up to NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE
# (200) requests per round trip, each request standing for an autocluster's idle jobs, and
# the lists prefetched before matching (no fragment). `per-request`: the protocol of the
# paper's schedds before batching, one request per round trip
# (e5/negotiation-per-request.conf.j2 says which knobs and why).
BATCHED, PER_REQUEST = "batched", "per-request"
NEGOTIATION_PROTOCOLS = (BATCHED, PER_REQUEST)
PROTOCOL_KNOB = "USE_RESOURCE_REQUEST_COUNTS"
# NEGOTIATOR_MAX_TIME_PER_SUBMITTER's default in 8.2 and 8.4 (param_info.in): a year
PAPER_ERA_TIME_LIMIT_S = 31536000


def negotiation_protocol_conf(protocol):
    """The CMs' fragment for `protocol` ('' for batched: the release's configuration)."""
    if protocol not in NEGOTIATION_PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(NEGOTIATION_PROTOCOLS)}, not {protocol!r}")
    if protocol == BATCHED:
        return ""
    return render_run_file("e5/negotiation-per-request.conf.j2", time_limit_s=PAPER_ERA_TIME_LIMIT_S)


def negotiation_protocol_scripts(cms, protocol):
    """{cm: the script that installs (or removes) `protocol`'s fragment and reconfigures}, for
    every CM: HAD may start the negotiator on any of them. HAD restarts with the reconfig
    (23.9's HAD drops its leader state on one)."""
    text = negotiation_protocol_conf(protocol)
    return {cm: ConfigFragment(None, cm, E5_NEGOTIATION_PROTOCOL_CONF).script(text, restart_had=True) for cm in cms}


def use_negotiation_protocol(ssh, cms, protocol):
    """Install `protocol`'s fragment on every CM (for batched: remove it) at once;
    AssertionError naming the CMs where it failed. The caller waits for HAD's one leader."""
    apply_fragments(ssh, negotiation_protocol_scripts(cms, protocol), f"negotiation protocol {protocol}: ",
                    error=AssertionError)


# the knob as the running master has it (it has reconfigured), else as the files have it
PROTOCOL_READBACK = Daemons.config_val_command(PROTOCOL_KNOB)


def protocol_in_force(value):
    """The protocol a CM's USE_RESOURCE_REQUEST_COUNTS (PROTOCOL_READBACK's output) gives its
    negotiator; None when the output is no boolean (the knob could not be read)."""
    lines = value.strip().splitlines()
    return {"true": BATCHED, "false": PER_REQUEST}.get(lines[-1].strip().lower() if lines else "")


def protocols_in_force(ssh, cms):
    """{cm: the protocol its configuration gives the negotiator, None where it was not read}."""
    res = ssh.run_many({cm: PROTOCOL_READBACK for cm in cms}, timeout=60)
    return {cm: protocol_in_force(r.stdout) if r.ok else None for cm, r in res.items()}


# --- two-tier collectors (GlideinWMS style, section 4.1) -----------------------------------
PLACEMENTS = ("ccb", "cm")


def child_collector_hosts(topo, placement="ccb"):
    """Where the child collectors run: with `ccb` placement the CCB hosts that are not
    central managers (the default topology's ccb1, ccb2) when there is one for each CM,
    else the central managers themselves; with `cm` placement always the central managers
    (GlideinWMS's own layout, and the one where CCB on the children can be compared with
    CCB on hosts of its own)."""
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, not {placement!r}")
    cms = sorted(h.name for h in topo.with_role("cm"))
    ccbs = [h.name for h in topo.with_role("ccb") if h.name not in cms]
    return ccbs if placement == "ccb" and len(ccbs) >= len(cms) else cms


def dedicated_ccb_hosts(topo):
    """CCB hosts that are not central managers ([] on `small`, where the CMs are the CCBs)."""
    cms = {h.name for h in topo.with_role("cm")}
    return [h.name for h in topo.with_role("ccb") if h.name not in cms]


def child_collector_top(topo, host, placement="ccb"):
    """The one top-level collector (a CM) the child on `host` forwards to: children are
    paired with the CMs in turn, as GlideinWMS pairs its secondary collectors with each
    HA central manager. One target per child: a collector reconnects to its view hosts
    under one shared time slice (5% of its time), so after a slow connect to the first
    target the second waits minutes under TCG; seen on `small`, where cm2's collector got
    no forwarded update in a 120 s window while cm1's got 40."""
    cms = sorted(h.name for h in topo.with_role("cm"))
    return cms[child_collector_hosts(topo, placement).index(host) % len(cms)]


def child_name(host):
    """A child collector's COLLECTOR_NAME (its ad's Name)."""
    return f"{CHILD_COLLECTOR_PREFIX}{host}"


def child_collector_conf(topo, host, placement="ccb", ccb=False):
    """A child collector on `host` at E5_CHILD_COLLECTOR_PORT (its own port, no shared port;
    a CCB server only with `ccb`) forwarding what the startds send it to its top-level
    collector."""
    return render_run_file("e5/child-collector.conf.j2", host=host, port=E5_CHILD_COLLECTOR_PORT,
                           collector_name=child_name(host), ccb=ccb,
                           top=f"{child_collector_top(topo, host, placement)}:{HTCONDOR_PORT}")


def tree_worker_conf(topo, worker, startds=None, placement="ccb", ccb=False, shared_port=True):
    """Worker `worker`'s daemons send their ads to one child collector per top-level
    collector instead of to the CMs (section 4.1, GlideinWMS under HA: every CM receives
    every update, through a child of its own). Within a CM's children, startds are dealt
    round-robin across the workers; the master goes with its first startd. One child per
    CM and daemon: sending to two children of one CM would deliver each update to it
    twice, with the same sequence number, which its statistics count as lost updates.
    `startds`: this run's startds per worker (default the topology's); `ccb`: the workers
    register with the child collectors as their CCB servers instead of the CCB hosts;
    `shared_port` False: no shared port on the worker (each daemon registers with CCB)."""
    groups = {}
    children = child_collector_hosts(topo, placement)
    for child in children:
        groups.setdefault(child_collector_top(topo, child, placement), []).append(
            f"{child}:{E5_CHILD_COLLECTOR_PORT}")
    workers = [h.name for h in topo.with_role("worker")]
    n = max(1, startds or topo.hosts[worker].startds)
    first = workers.index(worker) * n

    def hosts(k):
        return ", ".join(group[k % len(group)] for _, group in sorted(groups.items()))

    return render_run_file("e5/tree-worker.conf.j2", master=hosts(first),
                           startds=[(i, hosts(first + i - 1)) for i in range(1, n + 1)],
                           ccb=[f"{c}:{E5_CHILD_COLLECTOR_PORT}" for c in children] if ccb else [],
                           shared_port=shared_port)


def tops_without_updates(stats, tops):
    """The top-level collectors (`tops`: CM names) that counted no update over the window
    in `stats` (update_window's result): in the tree every CM must hear every startd."""
    return [t for t in tops if t not in stats or stats[t]["total"] <= 0]


class CollectorTree:
    """Switches the pool between one collector tier and a two-tier tree, and measures it.
    `placement`: where the children run (child_collector_hosts); `ccb`: the children are
    also the workers' CCB servers; `shared_port` False: none on the workers."""

    # a worker restarts when these change (its daemons' CCB registrations and listening
    # sockets are set up at start), and reconfigures otherwise
    WORKER_RESTART_KNOBS = ("CCB_ADDRESS", "USE_SHARED_PORT")

    def __init__(self, exp, startds=0, placement="ccb", ccb=False, shared_port=True):
        self.exp, self.topo, self.ssh = exp, exp.topo, exp.ssh
        self.startds = startds  # this run's startds per worker (0: the topology's)
        self.placement, self.ccb, self.shared_port = placement, ccb, shared_port

    @property
    def children(self):
        return child_collector_hosts(self.topo, self.placement)

    def candidates(self):
        """Every host a child collector may run on, in either placement."""
        return sorted({h for p in PLACEMENTS for h in child_collector_hosts(self.topo, p)})

    def use(self, shape):
        """Install (`tree`) or remove (`flat`, from every candidate host) the child
        collectors and the workers' fragment; a worker restarts when its CCB servers or its
        shared port change.
        Returns the hosts whose configuration changed."""
        tree = shape == "tree"
        cmds = {h: ConfigFragment(self.ssh, h, E5_CHILD_COLLECTOR_CONF).script(
                    child_collector_conf(self.topo, h, self.placement, self.ccb) if tree and h in self.children else "",
                    restart_had=self.topo.hosts[h].has("cm"))
                for h in self.candidates()}
        for w in self.exp.workers:
            conf = tree_worker_conf(self.topo, w.name, max(w.startds, self.startds), self.placement, self.ccb,
                                    self.shared_port) if tree else ""
            cmds[w.name] = ConfigFragment(self.ssh, w.name, E5_TREE_WORKER_CONF).script(
                conf, restart_on=self.WORKER_RESTART_KNOBS)
        return apply_fragments(self.ssh, cmds, f"collector shape {shape}: ", timeout=300)

    def installed(self):
        """True while any host still has a fragment of the tree."""
        hosts = {h: E5_CHILD_COLLECTOR_CONF for h in self.candidates()}
        hosts.update({w.name: E5_TREE_WORKER_CONF for w in self.exp.workers})
        res = self.ssh.run_many({h: ConfigFragment(self.ssh, h, path).exists_command() for h, path in hosts.items()},
                                timeout=60)
        return any(r.stdout.strip() == "yes" for r in res.values())

    def children_running(self, hosts=None):
        """{host: a child collector listens there} for `hosts` (default: this placement's)."""
        res = self.ssh.run_many({h: f"ss -Hltn 'sport = :{E5_CHILD_COLLECTOR_PORT}' | wc -l"
                                 for h in (hosts or self.children)}, timeout=60)
        return {h: r.ok and r.stdout.strip().isdigit() and int(r.stdout.strip()) > 0 for h, r in res.items()}

    def targets(self):
        """The collectors of the tree as `-pool` targets: the CMs, then the running children."""
        running = self.children_running()
        return [h.name for h in self.topo.with_role("cm")] + \
            [f"{h}:{E5_CHILD_COLLECTOR_PORT}" for h in self.children if running.get(h)]

    def time_to_visible(self, slots, timeout, poll=5):
        """Restart the workers' HTCondor; seconds until the first top-level collector lists
        `slots` slots from startds started after the restart."""
        w = self.exp.workers[0].name
        since = int(float(self.ssh.run(w, "date +%s").stdout.strip()))
        top = self.topo.with_role("cm")[0].name
        seen = {"n": 0}
        self.exp.restart_condor([h.name for h in self.exp.workers])

        def visible():
            out = self.exp.schedd.status(f"-pool {top} -af Name DaemonStartTime").stdout
            seen["n"] = fresh_slots(out.splitlines(), since)
            return seen["n"] >= slots

        return float(wait_for(f"{slots} fresh slots in the collector on {top}", visible, timeout, poll,
                              host=self.exp.submit,
                              message=lambda: f"{seen['n']} of {slots} slots visible in the collector on {top} "
                                              f"{timeout} s after restarting the workers"))

    def update_stats(self):
        """{collector host[:port]: {total, lost, ads}} over the slot ads each collector holds."""
        return {t: sum_ad_updates(part) for t, part in
                self.exp.schedd.status_by_pool(self.targets(), "-af UpdatesTotal UpdatesLost", 120).items()}

    def updates_since(self, before):
        """update_window between `before` (an update_stats reading) and now."""
        return update_window(before, self.update_stats())

    def wait_children(self, shape, timeout=120, poll=5):
        """{host: running} once the child collectors run (tree) or none does (flat);
        AssertionError after `timeout` s."""
        seen = {}

        def in_shape():
            if shape == "tree":
                running = seen["running"] = self.children_running()
                return all(running.values())
            running = seen["running"] = self.children_running(self.candidates())
            return not any(running.values())

        wait_for(f"child collectors in shape {shape}", in_shape, timeout, poll, error=AssertionError,
                 message=lambda: f"child collectors running {seen['running']}, shape {shape}")
        return seen["running"]
