"""Constants shared by every layer: ports, paths, users and HTCondor job states.

The templates in provision/templates/ get these too (as `c`), so a port or a
path is written in exactly one place.
"""
from enum import IntEnum

# XRootD on the DTN (one config file, roles chosen with -n) and on the origin
XROOTD_REDIRECTOR_PORT = 1094   # DTN redirector (cmsd manager below)
XROOTD_CACHE_PORT = 1096        # DTN caching proxy (XrdPss + XrdPfc) on the RAID
XROOTD_DIRECT_PORT = 1097       # DTN pass-through proxy: nothing cached
XROOTD_ORIGIN_PORT = 1094       # the remote origin site's data server
CMSD_MANAGER_PORT = 3121
HTCONDOR_PORT = 9618            # shared port / collector
CONDOR_LOG_DIR = "/var/log/condor"
NEGOTIATOR_LOG = f"{CONDOR_LOG_DIR}/NegotiatorLog"   # written with D_SUB_SECOND on the CMs
SCHEDD_LOG = f"{CONDOR_LOG_DIR}/SchedLog"

# The DTN's software RAID and the caches on it
MD_DEVICE = "/dev/md0"
MD_SYSFS = "/sys/block/md0/md"
RAID_MOUNT = "/raid"
CACHE_DIR = f"{RAID_MOUNT}/xcache"
RAID_TEST_DIR = f"{RAID_MOUNT}/ddtest"
ORIGIN_DIR = "/srv/origin"
ORIGIN_CHECKSUMS = f"{ORIGIN_DIR}/checksums.txt"
DATA_NAMESPACE = "/data"

# Who submits jobs, and where their work directories go
SUBMIT_USER = "vagrant"
SUBMIT_HOME = f"/home/{SUBMIT_USER}"
SUBMIT_USERS = (SUBMIT_USER,)
# HTCondor-C jobs routed to the DTN are submitters "<ROUTE_GROUP>_<route>.<user>" there
ROUTE_GROUP = "e2route"

# HTCondor's MAX_TIME_SKIP on every guest: larger than any snapshot's age, so the clock
# step after a restore does not make each master restart all its daemons (ten years)
MAX_TIME_SKIP_S = 10 * 365 * 86400

# Less noise from the host (testbed/machines/quiesce.py): `testbed run` may pause (libvirt
# suspend) the guests its experiment does not use. Never a guest of the main HTCondor pool,
# whatever the experiment declares: every daemon sends its ads to both collectors and HAD
# expects its peer's heartbeats (cm), the submit host reaches every startd and the DTN only
# through the CCB servers (ccb; their PRIVATE_NETWORK_NAMEs differ), the negotiator matches
# jobs to any startd the collectors list (worker) and contacts every schedd with idle jobs
# (submit). A paused guest is not down - no RST, no refused connection - so each daemon
# that contacts it waits out its time-out (x3 under TCG) instead of failing over at once.
POOL_ROLES = ("submit", "cm", "ccb", "worker")
QUIET_ANSWER_S = 300       # a resumed guest must answer over SSH within this many seconds
QUIET_HEALTHY_S = 600      # and the site be healthy again within this many (else the run says so)

# Scaled profiles (testbed/model/scaled_profiles.py, docs/scaling.md): a socket buffer limit
# scaled down by k never goes below this many bytes. net.core.wmem_max below SOCK_MIN_SNDBUF
# (2 x (2048 + sizeof(struct sk_buff)), about 4.6 KB on x86-64) is refused by sysctl, and a
# TCP window of fewer than a few 1448-byte segments stalls on delayed ACKs: two pages clear both.
SCALED_BUFFER_FLOOR = 8192
# net.core.rmem_max/wmem_max cap every socket's SO_RCVBUF/SO_SNDBUF, netlink's included:
# iproute2 asks for 1 MB, and with a cap of a few KB an address dump fails with ENOBUFS
# ("No buffer space available"), so `ip addr` and DHCP renewals break. HTCondor sets no
# buffer on transfer sockets, so these caps never bound a transfer window and scaling them
# below the kernel's own default (212992) buys the model nothing.
SCALED_CAP_FLOOR = 212992

# The fault suite (testbed/injectors): where its jobs work, how long a job's lease is, the
# guest-side units that undo a fault by themselves, the DTN's data disks by serial
JOB_LEASE_S = 2400                  # HTCondor's default job_lease_duration, set explicitly
FAULT_WORKDIR = f"{SUBMIT_HOME}/faults"
FAULT_UNIT_PREFIX = "tb-fault"      # systemd-run units: tb-fault-<name>.timer/.service
DEADMAN_MARGIN_S = 30               # a guest-side timer undoes a fault this long after its end
# Jobs without file transfer (should_transfer_files = NO) work in a directory that exists
# under the same path on the submit host (submit file, job log) and on their worker (the
# executable, the job's stdout): a tree of its own, outside the submit user's home
FAULT_LOCAL_IWD = "/srv/tb-faults"
# A cut around a schedd restart ends this long after every job's new shadow started, so
# the new shadows' first attempts to reach their starters fall inside the cut
RESTART_CUT_HOLD_S = 10
# The report on HTCondor's transfer-key defect (a same-shadow reconnect loses the output upload)
TRANSFER_KEY_DEFECT_DOC = "docs/upstream/htcondor-transfer-key.md"
DATA_DISK_BY_ID = "/dev/disk/by-id/virtio-tb-data-"   # + member index (serials set by the Vagrantfile)
MD_MAX_DEGRADED = {6: 2, 5: 1, 1: 1, 10: 1, 0: 0}   # members an md level can lose and still run

# The RAID members as disks of their own (testbed/machines/disks.py): limits per
# member enforced by QEMU's block throttling (libvirt <iotune>), topology `disks.mb_per_s` and
# `disks.iops` (0: no limit). 150 IOPS is a 7200 rpm spindle's random-operation rate with
# command queueing (8.5 ms seek + 4.2 ms half turn is ~80 at queue depth 1): what makes a
# read-modify-write cost time. 40 MB/s is below a modern 7200 rpm disk's 150-250 MB/s on
# purpose: four data members still give 160 MB/s of full-stripe bandwidth, above what a TCG
# guest's md writes at all (22-44 MB/s measured on unthrottled members), so a stripe cache
# that avoids read-modify-write is not held back by the members, while a one-member fio
# check can reach the limit under TCG, and the fault suite's rebuild (23 MB/s per member
# measured unthrottled) and the other suites' RAID I/O keep their times.
DISK_MB_PER_S = 40
DISK_IOPS = 150
DISK_CACHE_MODES = ("none", "directsync", "writethrough", "writeback", "unsafe", "default")
DISK_CACHE_PREFERRED = "none"          # O_DIRECT: the host's page cache stands behind no member
DISK_CACHE_FALLBACK = "writethrough"   # where the pool's filesystem refuses O_DIRECT
DTN_XROOTD_UNITS = ("cmsd@redir", "xrootd@redir", "cmsd@data", "xrootd@data", "xrootd@xcache",
                    "xrootd@direct")
CACHE_UNIT = "xrootd@xcache"     # the DTN's caching proxy
RAID_USERS = (CACHE_UNIT, "xrootd@data", "cmsd@data")   # units with files open on the RAID
ORIGIN_UNIT = "xrootd@origin"
CONDOR_UNIT = "condor.service"

# E5 (HTCondor scale): the job attribute that tags the suite's jobs with their use,
# and the extra startds a run adds to each worker (removed again in the suite teardown).
E5_ROLE_ATTR = "E5Role"
E5_STARTDS_CONF = "/etc/condor/config.d/70-e5-startds.conf"
# Two-tier collectors for one E5 row: child collectors on their own port (no shared
# port) and the workers' collector list pointing at them; removed after the row.
E5_CHILD_COLLECTOR_PORT = 9620
E5_CHILD_COLLECTOR_CONF = "/etc/condor/config.d/71-e5-child-collector.conf"
E5_TREE_WORKER_CONF = "/etc/condor/config.d/71-e5-collector-tree.conf"
# The negotiator's resource-request protocol for one E5 negotiation row, on every CM (HAD
# may run the negotiator on either); removed after the row.
E5_NEGOTIATION_PROTOCOL_CONF = "/etc/condor/config.d/72-e5-negotiation-protocol.conf"
# Uber-glidein workers: how many startd daemons fit a worker VM. A startd's
# memory until a run has measured one: HTCONDOR-NOTES measured a 300-slot startd at 32 MB
# RSS, and a startd of one slot or a few holds less, so 32 MB bounds it. What a worker
# guest uses without its startds (kernel, systemd, sshd, condor_master and
# condor_shared_port of a Debian 13 guest) is an estimate kept on the safe side.
E5_STARTD_MB = 32
WORKER_BASE_MB = 192
MAX_STARTDS_PER_WORKER = 1024
# E4 (HPC production): the run's whole-node slot layout on the workers, the shared
# software area (NFS, read-only, site network only) exported by the submit host and
# mounted on the nodes, the job attribute tagging the suite's jobs, the DB base port.
E4_NODES_CONF = "/etc/condor/config.d/70-e4-nodes.conf"
E4_EXPORTS = "/etc/exports.d/testbed-e4.exports"
E4_SHARED_DIR = "/srv/e4-shared"
E4_MOUNT = "/mnt/e4-shared"
E4_ROLE_ATTR = "E4Role"
E4_DB_PORT = 33061
# HTCondor's process names as ps shows them (comm, 15 characters) -> daemon.
CONDOR_DAEMON_COMMS = {"condor_schedd": "schedd", "condor_collecto": "collector",
                       "condor_negotiat": "negotiator", "condor_shadow": "shadow",
                       "condor_startd": "startd", "condor_starter": "starter",
                       "condor_master": "master", "condor_shared_p": "shared_port"}
# HTCondor daemon -> its program; `comm(daemon)` is the process name `pgrep -x` matches.
CONDOR_DAEMONS = {"master": "condor_master", "collector": "condor_collector", "negotiator": "condor_negotiator",
                  "schedd": "condor_schedd", "startd": "condor_startd", "had": "condor_had",
                  "replication": "condor_replication", "shared_port": "condor_shared_port"}


def comm(daemon):
    """The process name `pgrep -x` matches for a daemon (Linux cuts comm at 15 characters)."""
    if daemon not in CONDOR_DAEMONS:
        raise ValueError(f"unknown HTCondor daemon {daemon!r} (known: {', '.join(CONDOR_DAEMONS)})")
    return CONDOR_DAEMONS[daemon][:15]


class JobStatus(IntEnum):
    """HTCondor's JobStatus attribute (condor_utils/proc.h)."""
    IDLE = 1
    RUNNING = 2
    REMOVED = 3
    COMPLETED = 4
    HELD = 5
    TRANSFERRING_OUTPUT = 6
    SUSPENDED = 7

    @property
    def label(self):
        return self.name.lower().replace("_", " ")


def as_template_context():
    """Every constant above, for the config templates (`{{ c.XROOTD_CACHE_PORT }}`)."""
    return {k: v for k, v in globals().items() if k.isupper()}

# E3 (FAX, seed 002): a federation on the DTN for the suite's run only - one XRootD data
# server per emulated site (own port, own export under the RAID), each cmsd subscribed to
# an E3 redirector; worker-side, one local user, address and routing table per compute
# site so each (compute, storage) cell crosses its own netem class. All removed again
# in the suite teardown.
E3_REDIRECTOR_PORT = 1110
E3_REDIRECTOR_SITE_INDEX = 0        # the redirector belongs to site a: a reader at another site
                                    # pays the RTT to a on the redirect (e3_site.redirect_rtt)
E3_CMSD_PORT = 3131
E3_SERVER_PORT_BASE = 1111          # site i (0, 1, 2, ...) serves on 1111 + i
E3_NAMESPACE = "/e3"                # global names /e3/<site>/<file>.root
E3_LOCALROOT = f"{RAID_MOUNT}/e3"   # physical /raid/e3/e3/<site>/...
E3_INSTANCE_PREFIX = "e3"           # xrootd@e3redir, xrootd@e3-a, cmsd@e3-a, ...
E3_PYTHON = "/opt/tb-e3/bin/python"  # the box's venv: ROOT and uproot over python3-xrootd
E3_TOOL_DIR = "/usr/local/lib/tb-e3"  # provision/guest/E3_TOOL_FILES, pushed by the suite
E3_TOOL_FILES = ("e3_job.py", "e3_ttree.py", "e3_ttree.C", "e3_uproot.py")
E3_TOOL = f"{E3_TOOL_DIR}/e3_job.py"
E3_READERS = ("root", "uproot")      # e3_job.py read --reader
E3_USER_PREFIX = "tb-e3"            # tb-e3a, tb-e3b, ... on the submit host and the worker
E3_UID_BASE = 62000                 # site i: uid 62001 + i
E3_TABLE_BASE = 300                 # site i: routing table 301 + i
E3_HOST_OCTET_BASE = 200            # site i: worker alias on the site network .201 + i
E3_JOB_RSS_MB_GUESS = {"uproot": 110, "root": 550}  # a job's peak RSS (MB) before this run measured one
E3_JOB_PRIVATE_MB_GUESS = {"uproot": 110, "root": 200}  # ... and its private (anonymous) part
E3_ROOT_LEARN_ENTRIES = 100          # TTreeCache's own default learning phase (entries)
TCP_INITIAL_WINDOW_BYTES = 10 * 1448  # Linux's initial congestion window (RFC 6928), restarted after idle
E3_CONDOR_CONF = "/etc/condor/config.d/72-e3-users.conf"
E3_LOCAL_DIR = "/var/lib/tb-e3"     # baselines: a file on the worker's disk (not /tmp or /var/tmp:
                                    # HTCondor mounts a job's own scratch there) and in /dev/shm
E3_SHM_DIR = "/var/lib/tb-e3-memory"  # a tmpfs the suite mounts: a job gets its own private /dev/shm

# Existing hosts (topology `existing:`, docs/existing-hosts.md): what `up` checks before it
# changes anything on one, and where the testbed keeps its record there. Debian 13 only:
# the templates are written for its HTCondor 23.9 and XRootD 5.8 (Debian 12 has no
# HTCondor package at all).
EXISTING_OS = {"debian": ("13",)}
EXISTING_DISK_MB = 2048          # free on / and /var: the packages (~300 MB), logs, spool, tokens
CLOCK_SKEW_MAX_S = 2.0           # |host clock - this machine's| (the VMs' clocks are set from it)
TESTBED_MARKER = "/etc/testbed/installed-by"   # which topology (and checkout) owns the host
TESTBED_LEDGER = "/var/lib/testbed/ledger"     # every change the testbed made, what `down` undoes
TESTBED_BACKUP_DIR = "/var/lib/testbed/backup"  # originals of the files it replaced
HOSTS_BLOCK_BEGIN = "# BEGIN testbed site hosts"
HOSTS_BLOCK_END = "# END testbed site hosts"

# a guest's available memory in MB (one line of output)
MEM_AVAILABLE_CMD = "awk '/^MemAvailable:/ {print int($2/1024)}' /proc/meminfo"

# The capacity planner (`testbed plan --for EXPERIMENT:SCALE`, testbed/harness/capacity.py):
# what one running job, startd or role costs, as measured on this testbed where it was, and
# from the papers or estimated (said so) where it was not.
SHADOW_MB = 2.0          # per running job on the submit host: E5's ramp on `default` took the submit
                         # guest's MemAvailable from 763 to 43 MB between 16 and 382 running jobs (README)
STARTER_MB = 2.0         # per running job on a worker: one condor_starter (HTCONDOR-NOTES.md)
STARTD_MB = 32           # per sleeper startd (a 300-slot startd: HTCONDOR-NOTES.md)
PLAN_SLOTS_PER_STARTD = 50   # the sleeper startds of topologies/default.yaml
SCHEDD_JOBS_PER_CORE = 1300  # E5's ramp: the schedd took 11-15% of a TCG core at 200 running jobs
STARTD_CORES = 0.18          # E5's ramp: each 50-slot startd took 16-18% of a TCG core
E1_SHADOWS_PER_CORE = 100    # seed 000, Table 2: one 40-core submit host moved 4000 jobs' output
E1_PAPER_JOBS = 4000         # seed 000, Table 3: the saturation test's parallel jobs ("every slot")
E1_LINK_MB_S = 1250          # seed 000: the submit host's 10 Gb/s NIC
E3_BYTES_PER_VALUE = 3.0     # E3 ci: a 300-branch x 2000-event file is ~1.8 MB (experiments/e3/fax.py)
E4_TASK_MB = 30              # estimate (not measured): one e4_node.py task, Python + pymysql
E4_DB_MB = 256               # estimate (not measured): a private MariaDB beside its loaded dump
ROLE_BASE_MB = {"submit": 1024, "cm": 512, "ccb": 512, "worker": 768, "dtn": 2048, "origin": 512}
                             # what topologies/default.yaml gives each role (its idle site is healthy)
HOST_DISK_GB = 10            # per host: the OS, the packages, logs and spool

# Remote hypervisors (topology `hypervisors:`, docs/operations/remote-hypervisors.md): the
# libvirt of this machine, the site network's VXLAN between hypervisors, and where a remote
# hypervisor keeps the box's kernel and initrd (vagrant-libvirt uploads only the disk image)
LOCAL_LIBVIRT_URI = "qemu:///system"
VXLAN_PORT = 4789               # IANA's VXLAN port (Linux picks 8472 when none is given)
VXLAN_OVERHEAD = 50             # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8 bytes
UNDERLAY_MTU = 1500             # the hypervisors' own network; the site network gets 1500 - 50
MAX_JOINED_HYPERVISORS = 9      # site bridges .1 (this machine) to .9; hosts start at .10
HYPERVISOR_BOOT_DIR = "/var/lib/libvirt/boot"
LIBVIRT_TB_CACHE_MIN = (8, 0)   # libvirt that writes <tcg><tb-cache> (accel.TCG_TB_CACHE_MB)

# `testbed box build --patch` (testbed/machines/daemon_build.py): HTCondor's source as Debian's
# archive serves it (the upstream tarball repacked without non-free files; Debian's packaging
# tarball is not served), the daemons a patch may change, and the packaged libraries of the
# box's condor they link against (the chroot installs the same condor as the box).
HTCONDOR_SOURCE = "pool/main/c/condor/condor_23.9.6+dfsg.orig.tar.xz"   # under the Debian mirror
HTCONDOR_SOURCE_SHA256 = "f515dcf37a8bfed0ecb6f344b606ab09eb3d74e779ba08e9bfdc7dfd31273190"
HTCONDOR_SOURCE_TOP = "htcondor-23.9.6"        # the tarball's top directory
REBUILDABLE_DAEMONS = {                        # source directory: (cmake target, installed as)
    "src/condor_shadow.V6.1/": ("condor_shadow", "/usr/sbin/condor_shadow"),
}
CONDOR_PACKAGED_LIBS = {                       # an in-tree static library: the packaged shared one
    "libcondor_utils": "/usr/lib/libcondor_utils_23_9_6.so",
    "libcondor_version_obj": "/usr/lib/libcondor_utils_23_9_6.so",   # CondorVersion() is in it
    "libclassad": "/usr/lib/libclassad.so.23.9.6",
}
PACKAGED_SUFFIX = ".debian"                    # the box keeps the packaged daemon beside the rebuilt one
BOX_PATCHES_FILE = "/usr/share/grid-testbed/condor-patches"  # in a patched box: NAME:SHA256 a line

# Parameters a record carries to say what its measurement found (where a ramp stopped, why,
# and at how many startds per worker: e5.collector_limit, e5.max_running), not which point
# it measured: `testbed reference save --merge/--add-trials` match points without them.
OUTCOME_PARAMS = ("found", "limit", "per_worker")

# The progress line `testbed run` prints as each measured point starts (testbed/harness/
# progress.py, robot/listeners/Progress.py). Each point's seconds go into the run's manifest
# under POINT_SECONDS_FIELD, which a kept reference carries on: the next run's estimate. A
# row that skipped measured nothing, so only these statuses are timed.
POINT_SECONDS_FIELD = "point_seconds"
TIMED_STATUSES = ("PASS", "FAIL")
PROGRESS_SEPARATOR = " · "
