"""What a site did before a run: how it came up (a bring-up, or a snapshot restored) and the
runs it carried since. A guest's page cache and memory carry one suite's load into the
next (E4's start-up after E3 on the same VMs measured 5x its time on a fresh site), so a
run's manifest says which site it met and a reference can be read for it."""
import json

from testbed.model.clock import utc_iso
from testbed.model.state import write_json

RECORD = "site-history.json"


def _path(state):
    return state.dir / RECORD


def read(state):
    """The record, or None when nothing recorded how the site came up (a plain `vagrant up`,
    a site brought up before this record existed)."""
    try:
        data = json.loads(_path(state).read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _write(state, data):
    path = _path(state)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, data)


def began(state, how, runs=()):
    """The site is healthy after `how` ("bring-up", "snapshot NAME"); `runs`: those the
    snapshot's site had carried before it was taken."""
    _write(state, {"since": utc_iso(), "how": how, "runs": list(runs)})


def forget(state):
    _path(state).unlink(missing_ok=True)


def for_run(state):
    """The manifest's `site`: how the site came up, when, and the runs it carried before this one."""
    data = read(state)
    if data is None:
        return {"how": "unknown", "runs_before": []}
    return {"how": data.get("how", "unknown"), "since": data.get("since"), "runs_before": list(data.get("runs", []))}


def add_run(state, run_id):
    """Count a run as carried by the site (nothing when no record says how the site came up)."""
    data = read(state)
    if data is not None:
        _write(state, data | {"runs": [*data.get("runs", []), run_id]})


def describe(site):
    """One phrase for a manifest's `site`: 'a site fresh from a bring-up', 'a site that had
    carried 1 run since snapshot s0 (ID)', 'a site of unknown history'."""
    if not isinstance(site, dict) or site.get("how", "unknown") == "unknown":
        return "a site of unknown history"
    origin = "a bring-up" if site["how"] == "bring-up" else site["how"]
    before = site.get("runs_before") or []
    if not before:
        return f"a site fresh from {origin}"
    runs = "1 run" if len(before) == 1 else f"{len(before)} runs"
    return f"a site that had carried {runs} since {origin} ({', '.join(before)})"
