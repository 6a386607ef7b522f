"""Restores that failed, kept in the testbed's state folder. A suite's teardown puts the
site back as it found it (no WAN beyond the topology's, `default` in force, daemons and
slots as provisioned); a restore step that fails is written here, the site keeps what the
suite changed, and the next run refuses until the site is brought up again (`down`
removes the record)."""
import json

from testbed.model.state import write_private


def record_path(state):
    return state.dir / "needs-repair.json"


def record(state, suite, step, problem):
    """Add a failed restore step of `suite`'s teardown; returns every failure recorded."""
    failures = needed(state) + [{"suite": suite, "step": step, "problem": " ".join(str(problem).split())[:300]}]
    write_private(record_path(state), json.dumps(failures, indent=2) + "\n")
    return failures


def needed(state):
    """[{suite, step, problem}] of the failed restores since the site was brought up."""
    try:
        data = json.loads(record_path(state).read_text())
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else []


def refusal(topo, state):
    """One line saying why no run may start on this site and how to repair it, or None."""
    failures = needed(state)
    if not failures:
        return None
    first = failures[0]
    more = f" (and {len(failures) - 1} more step(s))" if len(failures) > 1 else ""
    return (f"site {topo.name} needs repair: {first['suite']}'s teardown could not "
            f"`{first['step']}`{more}: {first['problem']}; `./tb -t {topo.name} down && "
            f"./tb -t {topo.name} up` brings up a clean site ({record_path(state)} lists the steps)")


def clear(state):
    record_path(state).unlink(missing_ok=True)
