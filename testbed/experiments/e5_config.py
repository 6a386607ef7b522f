"""E5's configuration of the pool for one run: the job tag, extra startds per worker,
and the two-tier collector tree (child collectors, the workers' collector list), each a
config.d fragment installed through `gateway.ConfigFragment` and removed after the row."""
from testbed.model.constants import (E5_CHILD_COLLECTOR_CONF, E5_CHILD_COLLECTOR_PORT, E5_ROLE_ATTR,
                                     E5_STARTDS_CONF, E5_TREE_WORKER_CONF, HTCONDOR_PORT)
from testbed.remote.poll import wait_for
from testbed.services.gateway import ConfigFragment, apply_fragments
from testbed.services.parsers import fresh_slots, sum_ad_updates, update_window

SLEEP_SECONDS = 86400  # sleepers run until the suite removes them


def role_constraint(role):
    """The ClassAd constraint that selects the suite's jobs tagged `role`."""
    return f'{E5_ROLE_ATTR} =?= "{role}"'


# --- more startds per worker for one run ---------------------------------------------------
def extra_startd_names(host, total):
    """The local names of the startds a run adds to a worker beyond the topology's count
    (each has its own EXECUTE directory, `$(EXECUTE)/<name>`)."""
    return [f"startd{i}" for i in range(host.startds + 1, total + 1)]


def extra_startds_conf(host, total):
    """A config fragment adding startds startds+1..total to a worker (the same names and
    files as the rendered worker.conf), or '' when the topology already runs that many."""
    lines = [f"# E5 run: {total} startds on {host.name} (topology: {host.startds}); "
             f"removed by the E5 suite teardown"]
    if total <= host.startds:
        return ""
    for name in extra_startd_names(host, total):
        n = name.upper()
        lines += [f"{n} = $(STARTD)", f"DAEMON_LIST = $(DAEMON_LIST) {n}", f"DC_DAEMON_LIST = + {n}",
                  f"{n}.STARTD_NAME = {n.lower()}", f"{n}.STARTD_LOG = $(LOG)/StartLog.{n}",
                  f"{n}.EXECUTE = $(EXECUTE)/{n.lower()}",
                  f"{n}.STARTD_ADDRESS_FILE = $(LOG)/.startd_address.{n}",
                  f"{n}.STARTD_HISTORY = $(SPOOL)/startd_history.{n}",
                  f'{n}_ENVIRONMENT = "_CONDOR_STARTER_LOG=$(LOG)/StarterLog.{n}"']
    return "\n".join(lines) + "\n"


def startds_script(text, execute_dirs=()):
    """Install (or, for '', remove) the extra-startds fragment; reconfig the master, which
    starts or stops the startds in its DAEMON_LIST. A startd whose EXECUTE directory is
    missing exits at start (status 4) and the master retries it forever, so each added
    startd's directory (`execute_dirs`, names under $(EXECUTE)) is made first, as
    provisioning makes the topology's."""
    return ConfigFragment(None, None, E5_STARTDS_CONF).script(text, make_dirs=execute_dirs)


def use_startds(ssh, workers, count):
    """Run `count` startds on every worker (fragments installed at once); {host: conf}
    of what was installed, {} when the topology already runs that many. AssertionError
    naming the hosts where it failed."""
    extra = {h.name: extra_startds_conf(h, count) for h in workers}
    if not any(extra.values()):
        return {}
    dirs = {h.name: extra_startd_names(h, count) for h in workers}
    apply_fragments(ssh, {h: startds_script(t, dirs[h]) for h, t in extra.items()}, "adding startds failed on ",
                    error=AssertionError)
    return extra


def restore_startds(ssh, workers):
    """Remove the run's extra startds (the topology's count again)."""
    ssh.run_many({h.name: startds_script("") for h in workers}, timeout=120)


# --- two-tier collectors (GlideinWMS style, section 4.1) -----------------------------------
def child_collector_hosts(topo):
    """Where the child collectors run: the CCB hosts that are not central managers (the
    default topology's ccb1, ccb2) when there is one for each CM, else the central
    managers themselves."""
    cms = sorted(h.name for h in topo.with_role("cm"))
    ccbs = [h.name for h in topo.with_role("ccb") if h.name not in cms]
    return ccbs if len(ccbs) >= len(cms) else cms


def child_collector_top(topo, host):
    """The one top-level collector (a CM) the child on `host` forwards to: children are
    paired with the CMs in turn, as GlideinWMS pairs its secondary collectors with each
    HA central manager. One target per child: a collector reconnects to its view hosts
    under one shared time slice (5% of its time), so after a slow connect to the first
    target the second waits minutes under TCG; seen on `small`, where cm2's collector got
    no forwarded update in a 120 s window while cm1's got 40."""
    cms = sorted(h.name for h in topo.with_role("cm"))
    return cms[child_collector_hosts(topo).index(host) % len(cms)]


def child_collector_conf(topo, host):
    """A child collector on `host` at E5_CHILD_COLLECTOR_PORT (its own port, no shared port,
    no CCB) forwarding what the startds send it to its top-level collector."""
    top = f"{child_collector_top(topo, host)}:{HTCONDOR_PORT}"
    n = "COLLECTOR2"
    return "\n".join([
        f"# E5 two-tier collectors: child collector on {host}; removed after the row",
        f"{n} = $(COLLECTOR)", f"{n}_ARGS = -f -p {E5_CHILD_COLLECTOR_PORT}",
        f"DAEMON_LIST = $(DAEMON_LIST) {n}", f"DC_DAEMON_LIST = + {n}",
        f"{n}.COLLECTOR_NAME = child-{host}", f"{n}.USE_SHARED_PORT = False",
        f"{n}.COLLECTOR_LOG = $(LOG)/CollectorLog.child", f"{n}.COLLECTOR_ADDRESS_FILE = $(LOG)/.collector_address.child",
        f"{n}.ENABLE_CCB_SERVER = False", f"{n}.CONDOR_VIEW_HOST = {top}",
        f"{n}.UPDATE_VIEW_COLLECTOR_WITH_TCP = True"]) + "\n"


def tree_worker_conf(topo, worker, startds=None):
    """Worker `worker`'s daemons send their ads to one child collector per top-level
    collector instead of to the CMs (section 4.1, GlideinWMS under HA: every CM receives
    every update, through a child of its own). Within a CM's children, startds are dealt
    round-robin across the workers; the master goes with its first startd. One child per
    CM and daemon: sending to two children of one CM would deliver each update to it
    twice, with the same sequence number, which its statistics count as lost updates.
    `startds`: this run's startds per worker (default the topology's)."""
    groups = {}
    for child in child_collector_hosts(topo):
        groups.setdefault(child_collector_top(topo, child), []).append(f"{child}:{E5_CHILD_COLLECTOR_PORT}")
    workers = [h.name for h in topo.with_role("worker")]
    n = max(1, startds or topo.hosts[worker].startds)
    first = workers.index(worker) * n

    def hosts(k):
        return ", ".join(group[k % len(group)] for _, group in sorted(groups.items()))

    lines = ["# E5 two-tier collectors: each daemon updates one child per CM; removed after the row",
             f"COLLECTOR_HOST = {hosts(first)}"]
    lines += [f"STARTD{i}.COLLECTOR_HOST = {hosts(first + i - 1)}" for i in range(1, n + 1)]
    return "\n".join(lines) + "\n"


def tops_without_updates(stats, tops):
    """The top-level collectors (`tops`: CM names) that counted no update over the window
    in `stats` (update_window's result): in the tree every CM must hear every startd."""
    return [t for t in tops if t not in stats or stats[t]["total"] <= 0]


class CollectorTree:
    """Switches the pool between one collector tier and a two-tier tree, and measures it."""

    def __init__(self, exp, startds=0):
        self.exp, self.topo, self.ssh = exp, exp.topo, exp.ssh
        self.startds = startds  # this run's startds per worker (0: the topology's)

    def use(self, shape):
        """Install (`tree`) or remove (`flat`) the child collectors and the workers'
        fragment. Returns the hosts whose configuration changed."""
        tree = shape == "tree"
        children = child_collector_hosts(self.topo)
        cmds = {h: ConfigFragment(self.ssh, h, E5_CHILD_COLLECTOR_CONF).script(
                    child_collector_conf(self.topo, h) if tree else "", restart_had=self.topo.hosts[h].has("cm"))
                for h in children}
        for w in self.exp.workers:
            conf = tree_worker_conf(self.topo, w.name, max(w.startds, self.startds)) if tree else ""
            cmds[w.name] = ConfigFragment(self.ssh, w.name, E5_TREE_WORKER_CONF).script(conf)
        return apply_fragments(self.ssh, cmds, f"collector shape {shape}: ")

    def installed(self):
        """True while any host still has a fragment of the tree."""
        hosts = {h: E5_CHILD_COLLECTOR_CONF for h in child_collector_hosts(self.topo)}
        hosts.update({w.name: E5_TREE_WORKER_CONF for w in self.exp.workers})
        res = self.ssh.run_many({h: ConfigFragment(self.ssh, h, path).exists_command() for h, path in hosts.items()},
                                timeout=60)
        return any(r.stdout.strip() == "yes" for r in res.values())

    def children_running(self):
        res = self.ssh.run_many({h: f"ss -Hltn 'sport = :{E5_CHILD_COLLECTOR_PORT}' | wc -l"
                                 for h in child_collector_hosts(self.topo)}, timeout=60)
        return {h: r.ok and r.stdout.strip().isdigit() and int(r.stdout.strip()) > 0 for h, r in res.items()}

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
        targets = [h.name for h in self.topo.with_role("cm")]
        running = self.children_running()
        targets += [f"{h}:{E5_CHILD_COLLECTOR_PORT}" for h in child_collector_hosts(self.topo) if running.get(h)]
        return {t: sum_ad_updates(part)
                for t, part in self.exp.schedd.status_by_pool(targets, "-af UpdatesTotal UpdatesLost", 120).items()}

    def updates_since(self, before):
        """update_window between `before` (an update_stats reading) and now."""
        return update_window(before, self.update_stats())

    def wait_children(self, shape, timeout=120, poll=5):
        """{host: running} once the child collectors run (tree) or none does (flat);
        AssertionError after `timeout` s."""
        seen = {}

        def in_shape():
            running = seen["running"] = self.children_running()
            return all(running.values()) == (shape == "tree") and (shape == "tree" or not any(running.values()))

        wait_for(f"child collectors in shape {shape}", in_shape, timeout, poll, error=AssertionError,
                 message=lambda: f"child collectors running {seen['running']}, shape {shape}")
        return seen["running"]
