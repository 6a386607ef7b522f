"""The profile in force on a testbed, as `record_profile` last wrote it (the state folder's
profile record): read by bring-up, provisioning and the tuning verbs."""
import json
from contextlib import contextmanager

from testbed.model.clock import utc_iso


def recorded_profile(state):
    """The profile `record_profile` last wrote for this testbed, or None (none yet, or gone)."""
    from testbed.model import scaled_profiles
    from testbed.model.errors import TestbedError
    try:
        recorded = json.loads(state.profile_record.read_text())["profile"]
        # a scaled profile is rebuilt from its base and k (model/scaled_profiles.py)
        return scaled_profiles.load((recorded.get("derived") or {}).get("spec") or recorded["name"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, TestbedError):
        return None


def record_failed_apply(state, profile, problem):
    """An apply of `profile` that failed part way: the hosts that took it have it, the others
    not, so no profile is in force (recorded_profile reads None): the next apply or restore
    applies its profile in full instead of trusting the record."""
    state.profile_record.parent.mkdir(parents=True, exist_ok=True)
    state.profile_record.write_text(json.dumps({"profile": None, "failed_apply": {
        "profile": profile.name, "problem": " ".join(str(problem).split())[:300],
        "at": utc_iso()}}, indent=2))


@contextmanager
def failure_recorded(state, profile):
    """Around an apply of `profile`: should it fail part way (a Ctrl-C too), the record says
    so (record_failed_apply) before the error goes on."""
    try:
        yield
    except BaseException as exc:
        record_failed_apply(state, profile, exc)
        raise


def record_profile(state, profile, readback=None):
    state.profile_record.parent.mkdir(parents=True, exist_ok=True)
    state.profile_record.write_text(json.dumps({"profile": profile.as_dict(), "readback": readback,
                                                "applied": utc_iso()}, indent=2))
