"""The profile in force on a testbed, as `record_profile` last wrote it (the state folder's
profile record): read by bring-up, provisioning and the tuning verbs."""
import json
import time


def recorded_profile(state):
    """The profile `record_profile` last wrote for this testbed, or None (none yet, or gone)."""
    from testbed.model import profiles
    from testbed.model.errors import TestbedError
    try:
        return profiles.load(json.loads(state.profile_record.read_text())["profile"]["name"])
    except (OSError, ValueError, KeyError, TypeError, TestbedError):
        return None


def record_profile(state, profile, readback=None):
    state.profile_record.parent.mkdir(parents=True, exist_ok=True)
    state.profile_record.write_text(json.dumps({"profile": profile.as_dict(), "readback": readback,
                                                "applied": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                         time.gmtime())}, indent=2))
