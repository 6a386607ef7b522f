"""`testbed` command line. Every error is one line and exit code 2.

The verbs live in one module per group: site_commands.py, tuning_commands.py,
experiment_commands.py, report_commands.py."""
import argparse
import os
import sys
import time

from testbed.cli.common import tb_started
from testbed.cli.experiment_commands import (cmd_compare, cmd_demo, cmd_reference_list, cmd_reference_save, cmd_run,
                                             cmd_run_on_boxes, cmd_suites, cmd_test)
from testbed.cli.report_commands import cmd_report_docs, verbs
from testbed.cli.site_commands import (cmd_box_build, cmd_box_knobs, cmd_down, cmd_host_changes, cmd_host_undo,
                                       cmd_plan, cmd_provision, cmd_snapshot_delete, cmd_snapshot_list,
                                       cmd_snapshot_restore, cmd_snapshot_save, cmd_ssh, cmd_status, cmd_topology_show,
                                       cmd_up)
from testbed.cli.tuning_commands import (cmd_profile_apply, cmd_profile_diff, cmd_profile_show, cmd_wan_clear,
                                         cmd_wan_set, cmd_wan_show)
from testbed.model.errors import TestbedError


class OnBoxes(argparse.Action):
    """`run --box SPEC`, repeatable: a run that moves the site onto each box in turn is
    `cmd_run_on_boxes`, not `cmd_run`, which runs on the site as it is."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, [*getattr(namespace, self.dest), values])
        namespace.func = cmd_run_on_boxes


def build_parser():
    p = argparse.ArgumentParser(prog="testbed", description=__doc__)
    p.add_argument("--topology", "-t", default=None,
                   help="topology name (topologies/NAME.yaml) or path; default: $TESTBED_TOPOLOGY, "
                        "else the topology that is up, else `default`")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("plan", help="validate, render host bundles, print the Vagrant plan; with --for, "
                                    "the hosts an experiment needs at a scale and the topology to write")
    s.add_argument("--profile", default="default")
    s.add_argument("--json", action="store_true")
    s.add_argument("--write", action="store_true", help="write .testbed/TOPOLOGY/plan.json (what the Vagrantfile reads)")
    s.add_argument("--for", dest="for_run", metavar="EXPERIMENT:SCALE", default=None,
                   help="plan capacity for a run (e.g. e5:full): hosts, their RAM, cores and disk, and a topology")
    s.add_argument("--host-memory-mb", type=int, default=32768, metavar="MB",
                   help="with --for: the largest machine you have, RAM (default 32768)")
    s.add_argument("--host-cpus", type=int, default=16, metavar="N",
                   help="with --for: the largest machine you have, cores (default 16)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="with --for: an experiment parameter, as for `run`")
    s.set_defaults(func=cmd_plan)

    topo = sub.add_parser("topology", help="inspect topologies").add_subparsers(dest="sub", required=True)
    s = topo.add_parser("show", help="print the plan: VMs, addresses, roles, RAM")
    s.add_argument("--no-ram-check", action="store_true", help="do not compare with the host's free RAM")
    s.set_defaults(func=cmd_topology_show)

    box = sub.add_parser("box", help="the guest box").add_subparsers(dest="sub", required=True)
    s = box.add_parser("build", help="build the box if its recipe changed, and add it to Vagrant; with "
                                     "--patch, a box of its own: the stock box with the HTCondor daemons "
                                     "the patches change rebuilt from Debian's source")
    s.add_argument("--kind", default="debian13")
    s.add_argument("--mirror", default=None)
    s.add_argument("--force", action="store_true")
    s.add_argument("--patch", nargs="+", default=[], metavar="FILE",
                   help="patch files against HTCondor 23.9.6 (-p1), applied in this order; a topology "
                        "boots the result with `box: debian13+patch:NAME` (provision/patches/NAME.patch) "
                        "or `up --box debian13+patch:NAME`")
    s.add_argument("--release", default=None, metavar="NAME",
                   help="another middleware release: the HTCondor and XRootD versions "
                        "provision/box/releases/NAME.txt pins (e.g. sid: HTCondor 25, XRootD 6); a topology "
                        "boots it with `box: debian13+release:NAME` or `up --box debian13+release:NAME`")
    s.set_defaults(func=cmd_box_build)
    s = box.add_parser("knobs", help="what the running site's HTCondor release makes of the knobs the testbed "
                                     "sets (its defaults, the values in force) beside the kept releases'")
    s.add_argument("--keep", action="store_true",
                   help="keep this release's record in results/releases/ (the docs' release table)")
    s.set_defaults(func=cmd_box_knobs)

    s = sub.add_parser("up", help="bring the site up and wait until it is healthy")
    s.add_argument("--profile", default="default")
    s.add_argument("--serial", action="store_true", help="boot one VM at a time")
    s.add_argument("--cold", action="store_true",
                   help="boot and provision anew even when `down` parked this site for a warm `up`")
    s.add_argument("--dry-run", action="store_true",
                   help="check the existing hosts and hypervisors and list every change up would make; "
                        "change nothing")
    s.add_argument("--box", default=None, metavar="SPEC",
                   help="boot this box instead of the topology's `box:` (e.g. "
                        "debian13+patch:htcondor-reconnect-transkey); kept for the site until `down`")
    s.set_defaults(func=cmd_up)

    s = sub.add_parser("down", help="destroy the site's VMs and networks; undo what the testbed "
                                    "installed on its existing hosts")
    s.set_defaults(func=cmd_down)

    host = sub.add_parser("host", help="what the project changed on this machine outside its folders, "
                                       "and undoing it").add_subparsers(dest="sub", required=True)
    s = host.add_parser("changes", help="list the host ledger: packages, libvirt settings, daemons, "
                                        "pool, boxes and folders the project added")
    s.set_defaults(func=cmd_host_changes)
    s = host.add_parser("undo", help="undo every change of the ledger, newest first (no site may be up)")
    s.set_defaults(func=cmd_host_undo)

    s = sub.add_parser("provision", help="re-render and re-apply host config on the running site, "
                                         "all hosts in parallel (after editing templates or scripts)")
    s.add_argument("hosts", nargs="*", help="default: every host")
    s.add_argument("--profile", default=None, help="default: the profile in force")
    s.set_defaults(func=cmd_provision)

    snap = sub.add_parser("snapshot", help="whole-site snapshots (every VM's disks and memory)"
                          ).add_subparsers(dest="sub", required=True)
    s = snap.add_parser("save", help="save the healthy site as it is now")
    s.add_argument("name", nargs="?", default="pristine")
    s.set_defaults(func=cmd_snapshot_save)
    s = snap.add_parser("restore", help="revert every VM, set the guests' clocks, wait until healthy")
    s.add_argument("name", nargs="?", default="pristine")
    s.set_defaults(func=cmd_snapshot_restore)
    s = snap.add_parser("list", help="the snapshots every VM of the site has")
    s.set_defaults(func=cmd_snapshot_list)
    s = snap.add_parser("delete", help="delete a snapshot from every VM")
    s.add_argument("name")
    s.set_defaults(func=cmd_snapshot_delete)

    s = sub.add_parser("ssh", help="log in to a VM, or run a command there")
    s.add_argument("host")
    s.add_argument("command", nargs=argparse.REMAINDER)
    s.set_defaults(func=cmd_ssh)

    s = sub.add_parser("test", help="unit tests and the documentation build, then end to end on the small topology")
    s.add_argument("--unit-only", action="store_true", help="stop after the unit tests and the documentation build")
    s.add_argument("--keep", action="store_true", help="leave the small site up afterwards")
    s.set_defaults(func=cmd_test)

    s = sub.add_parser("demo", help="bring up the site (default topology), run E1 quick, compare with the paper")
    s.set_defaults(func=cmd_demo)


    prof = sub.add_parser("profile", help="tuning profiles").add_subparsers(dest="sub", required=True)
    s = prof.add_parser("show", help="every value a profile sets, per role")
    s.add_argument("name")
    s.set_defaults(func=cmd_profile_show)
    s = prof.add_parser("diff", help="the values where two profiles differ")
    s.add_argument("a")
    s.add_argument("b")
    s.set_defaults(func=cmd_profile_diff)
    s = prof.add_parser("apply", help="apply a profile to the running site, read it back, record it")
    s.add_argument("name")
    s.set_defaults(func=cmd_profile_apply)

    w = sub.add_parser("wan", help="emulated WAN links (netem)").add_subparsers(dest="sub", required=True)
    s = w.add_parser("set", help="set links with the topology's properties: "
                                  "A:B[:RTT][:jitter=1ms][:loss=0.1%%][:rate=100mbit], e.g. submit:worker:40ms:loss=1%%")
    s.add_argument("links", nargs="+", metavar="A:B:PROPERTIES",
                   help="two host groups (a role or a host) and the link's rtt, jitter, loss and rate "
                        "(rtt=40ms or 40ms first; jitter=Nms; loss=N%%; rate=Nkbit|Nmbit|Ngbit; or the "
                        "topology's rtt_ms=, jitter_ms=, loss_pct=, rate_mbit=); unset ones are 0")
    s.set_defaults(func=cmd_wan_set)
    s = w.add_parser("show", help="the links in force and their measured RTT")
    s.add_argument("--qdiscs", action="store_true", help="also print each host's tc qdiscs")
    s.set_defaults(func=cmd_wan_show)
    s = w.add_parser("clear", help="remove all WAN emulation")
    s.set_defaults(func=cmd_wan_clear)

    s = sub.add_parser("run", help="run an experiment suite into a new results folder")
    s.add_argument("suite", help="an experiment of the registry: smoke, e1, e2, ...")
    s.add_argument("--profile", action="append", default=None,
                   help="profile to compare (repeat for a sweep; default: the experiment's own)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="suite parameter, e.g. rtts=0,20,40 (repeatable; checked against the experiment)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--scale", choices=["ci", "quick", "full"], default=None,
                   help="ci: minutes, what `testbed test` runs; quick (the default): a first run; "
                        "full: the paper's shape, scaled to the testbed")
    g.add_argument("--quick", dest="scale", action="store_const", const="quick", help="--scale quick")
    g.add_argument("--full", dest="scale", action="store_const", const="full", help="--scale full")
    s.add_argument("--test", action="append", default=[], metavar="NAME",
                   help="run only this test (a measured point, e.g. rtt80-2W-wan-tuned); repeatable")
    s.add_argument("--include", action="append", default=[], metavar="TAG",
                   help="run only tests with this tag (e.g. RTT80, profile:wan-tuned); repeatable")
    s.add_argument("--repeat", type=int, default=None, metavar="N",
                   help="run the suite N times into the one results folder (default: the trials the "
                        "experiment declares for the scale, 1 at ci and 3 at quick and full): each point gets a "
                        "mean and 95%% interval, each claim a verdict; another count is a run of its own, "
                        "never kept as the reference without --force")
    s.add_argument("--box", action=OnBoxes, default=[], metavar="SPEC",
                   help="run on this box (repeat for a release axis: debian13 --box debian13+release:sid): "
                        "the site is brought up on each in turn, taken down first when it runs another, "
                        "and the runs are compared side by side")
    s.add_argument("--from-snapshot", default=None, metavar="NAME",
                   help="restore this whole-site snapshot first (`testbed snapshot save NAME`)")
    s.add_argument("--pause-unused", action=argparse.BooleanOptionalAction, default=None,
                   help="pause (libvirt suspend) the VMs the experiment does not use (never the pool's: "
                        "submit, CMs, CCB, workers) for the run and resume them after, however it ends "
                        "(default: the topology's quiet.pause_unused, else on at quick and full, off at ci)")
    s.add_argument("--pin", action=argparse.BooleanOptionalAction, default=None,
                   help="pin the measured VMs' vCPU and emulator threads to host CPUs of their own for "
                        "the run (e1: submit on one, the workers on another), and put the previous "
                        "pinning back after (default: the topology's quiet.pin, else off)")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("suites", help="check the suites' generated rows (point and claim rows) against "
                                      "the registry, or rewrite them")
    s.add_argument("names", nargs="*", metavar="SUITE", help="experiments of the registry (default: every one)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true",
                   help="print each block that differs and its first differing row; exit 1 if one does (the default)")
    g.add_argument("--write", action="store_true",
                   help="rewrite each block between its marker lines from the registry")
    s.set_defaults(func=cmd_suites)

    s = sub.add_parser("compare", help="table + HTML report of one or more runs")
    s.add_argument("runs", nargs="*", metavar="RUN", help="results folder, its name, or latest[-SUITE]")
    s.add_argument("--against", choices=["paper", "reference"],
                   help="paper: the papers' published figures and verdicts beside; reference: each run "
                        "beside the reference of its experiment, scale and topology, with the drift")
    s.add_argument("--html", default=None, help="where to write the report")
    s.set_defaults(func=cmd_compare)

    ref = sub.add_parser("reference", help="reference runs kept in the repository (results/reference/)"
                         ).add_subparsers(dest="sub", required=True)
    s = ref.add_parser("save", help="keep a finished run as the reference of its experiment, scale and topology")
    s.add_argument("run", metavar="RUN", help="results folder, its name, or latest[-SUITE]")
    s.add_argument("--force", action="store_true",
                   help="keep it even if it is still running, has failed rows or unreadable robot output")
    s.add_argument("--merge", action="store_true",
                   help="keep the points of the reference already there that this run did not measure "
                        "(a suite kept from two runs, each with rows of its own); only from a run of the "
                        "same code, parameters, box and site")
    s.add_argument("--add-trials", action="store_true",
                   help="add this run's trials to the reference's, up to the count the experiment declares "
                        "(a row too long to repeat in one run); only from a run of the same code, "
                        "parameters, box and site")
    s.add_argument("--why", default="", metavar="TEXT",
                   help="why the reference this run replaces is replaced (kept with it in "
                        "results/reference/history/)")
    s.add_argument("--variant", default="", metavar="NAME",
                   help="keep it beside the reference of its key, as <scale>-<topology>+NAME: a run of other "
                        "parameters or of some rows only (a scale model, one half of a suite), never in the "
                        "place of the reference of the whole suite")
    s.set_defaults(func=cmd_reference_save)
    s = ref.add_parser("list", help="the references kept, with the verdicts of their claims")
    s.set_defaults(func=cmd_reference_list)

    rep = sub.add_parser("report", help="pages made from the project's files").add_subparsers(dest="sub", required=True)
    s = rep.add_parser("docs", help="regenerate the generated sections of README.md and docs/ from the registry, "
                                    "suites, paper files, profiles, topologies and results/reference/")
    s.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page or a figure is out of date")
    s.set_defaults(func=cmd_report_docs)

    s = sub.add_parser("status", help="one table: VMs, daemons, HA, CCB, slots, XRootD, RAID")
    s.add_argument("--json", action="store_true")
    s.add_argument("--wait", type=float, default=0, metavar="SECONDS",
                   help="wait up to SECONDS for the site to become healthy")
    s.add_argument("--load-window", type=float, default=5, metavar="SECONDS",
                   help="measure each VM's qemu CPU and memory over SECONDS (0: skip)")
    s.set_defaults(func=cmd_status)
    return p


def hoist_topology(argv):
    """`testbed run e1 -t small` read as `testbed -t small run e1`: the global topology option
    may come before or after the verb (not inside `ssh HOST COMMAND...`, whose words are the
    command's own)."""
    argv = list(argv)
    verb = next((a for a in argv if not a.startswith("-") and a not in _option_values(argv)), None)
    if verb is None or verb == "ssh":
        return argv
    start = argv.index(verb) + 1
    head, rest, i = argv[:start], [], start
    while i < len(argv):
        a = argv[i]
        if a in ("-t", "--topology") and i + 1 < len(argv):
            head = [a, argv[i + 1]] + head
            i += 2
            continue
        if a.startswith("--topology="):
            head = [a] + head
        else:
            rest.append(a)
        i += 1
    return head + rest


def _option_values(argv):
    """The words that are values of the global options given before the verb."""
    return {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-t", "--topology")}


EXAMPLES = {
    "plan": ("testbed -t small plan --write", "testbed plan --for e5:full --host-memory-mb 65536 --host-cpus 32"),
    "topology show": "testbed -t default topology show",
    "box knobs": ("testbed -t small box knobs", "testbed -t small box knobs --keep"),
    "box build": ("testbed box build --force", "testbed box build --release sid",
                  "testbed box build --patch provision/patches/htcondor-reconnect-transkey.patch"),
    "up": ("testbed -t small up --profile wan-tuned", "testbed -t mysite.yaml up --dry-run",
           "testbed -t small up --box debian13+patch:htcondor-reconnect-transkey"),
    "down": "testbed -t small down",
    "host changes": "testbed host changes",
    "host undo": "testbed host undo",
    "provision": "testbed provision worker1 worker2",
    "snapshot save": "testbed snapshot save pristine",
    "snapshot restore": "testbed snapshot restore pristine",
    "snapshot list": "testbed snapshot list",
    "snapshot delete": "testbed snapshot delete pristine",
    "ssh": "testbed ssh submit condor_q -all",
    "test": "testbed test --unit-only",
    "demo": "testbed demo",
    "profile show": "testbed profile show table4-updated",
    "profile diff": "testbed profile diff table4-default table4-updated",
    "profile apply": "testbed profile apply wan-tuned",
    "wan set": "testbed wan set submit:worker:80ms:jitter=1ms:loss=0.1%:rate=1gbit",
    "wan show": "testbed wan show --qdiscs",
    "wan clear": "testbed wan clear",
    "run": "testbed run e1 --scale quick --repeat 5 --set rtts=0,40,80",
    "suites": "testbed suites --write e1 e2",
    "compare": "testbed compare latest-e1 --against paper",
    "reference save": "testbed reference save latest-e1",
    "reference list": "testbed reference list",
    "report docs": "testbed report docs --check",
    "status": "testbed status --wait 600",
}


def examples(name):
    """The examples of one verb (EXAMPLES holds one, or a tuple of several)."""
    value = EXAMPLES[name]
    return (value,) if isinstance(value, str) else tuple(value)


def epilog(found):
    return f"example: {found[0]}" if len(found) == 1 else "examples:\n" + "\n".join(f"  {e}" for e in found)


def with_examples(parser):
    """Each verb's --help ends with its examples (EXAMPLES)."""
    for name, p in verbs(parser).items():
        if name in EXAMPLES:
            found = examples(name)
            p.examples = found   # the CLI reference's example column (cli/report_commands.py)
            p.epilog = epilog(found)
            p.formatter_class = argparse.RawDescriptionHelpFormatter  # one example a line, unwrapped
    return parser


def note_setup_seconds(env=None, now=None):
    """TB_SETUP_SECONDS: the seconds from `./tb`'s start (TB_STARTED) to this command's, the
    host's set-up, which a bring-up records (machines/lifecycle.py)."""
    env = os.environ if env is None else env
    started = tb_started(env)
    if started is not None:
        env.setdefault("TB_SETUP_SECONDS", f"{(now or time.time()) - started:.1f}")


def main(argv=None):
    note_setup_seconds()
    parser = with_examples(build_parser())
    parser.set_defaults(parser=parser)   # `report docs` writes the CLI reference from it
    args = parser.parse_args(hoist_topology(sys.argv[1:] if argv is None else argv))
    try:
        return args.func(args)
    except TestbedError as exc:
        print(f"testbed: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("testbed: interrupted", file=sys.stderr)
        return 130
