"""Kept release records (services/release_knobs.py: one site's HTCondor and XRootD release,
the defaults of the knobs the testbed sets and the values in force), one file per release
under results/releases/, and the table that puts the releases side by side."""
import json
import re
from pathlib import Path

from testbed.machines import box_choice
from testbed.model import scaled_profiles
from testbed.model.errors import ConfigError
from testbed.results.runs import RESULTS_ROOT, write_json_atomic

KEPT_ROOT = RESULTS_ROOT / "releases"


def _version_key(text):
    return tuple(int(n) for n in re.findall(r"\d+", str(text))[:3])


def release_name(versions):
    """'HTCondor 25.14.1, XRootD 6.2.0' of a run's or a record's `versions` (health.guest_versions)."""
    versions = versions or {}
    return f"HTCondor {versions.get('condor', '?')}, XRootD {str(versions.get('xrootd', '?')).lstrip('v')}"


def keep(record, box, root=None):
    """Write `record` (collected on a site booted from `box`) to
    `<root>/htcondor-<version>.json`, replacing an older record of that release; the path."""
    root = Path(root or KEPT_ROOT)
    version = record.get("versions", {}).get("condor")
    if not version:
        raise ValueError("the record names no HTCondor version")
    path = root / f"htcondor-{version}.json"
    root.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {**record, "box": box})
    return path


def load_all(root=None):
    """The kept records, oldest release first ([] when none)."""
    root = Path(root or KEPT_ROOT)
    records = [json.loads(p.read_text()) for p in root.glob("*.json")]
    return sorted(records, key=lambda r: _version_key(r.get("versions", {}).get("condor")))


def differences(records):
    """[(knob, [default per record], where the testbed sets it, [value in force per record])]
    for each knob whose default is not the same in every record (a knob one release lacks
    included), in knob order. The value in force is the first role's that sets it."""
    if len(records) < 2:
        return []
    rows = []
    knobs = sorted(set().union(*(r.get("defaults", {}) for r in records)))
    for knob in knobs:
        defaults = [r.get("defaults", {}).get(knob) for r in records]
        if len(set(defaults)) == 1:
            continue
        where = next((r["knobs"][knob] for r in records if knob in r.get("knobs", {})), [])
        rows.append((knob, defaults, where, [in_force(r, knob) for r in records]))
    return rows


def in_force(record, knob):
    """{role: value} of a knob on the record's site, roles that share a value merged: 'a, b'."""
    by_value = {}
    for role, values in record.get("in_force", {}).items():
        by_value.setdefault(values.get(knob), []).append(role)
    return {", ".join(roles): value for value, roles in by_value.items()}


def refuse_unknown_knobs(profiles, site, root=None):
    """Raise ConfigError naming the first HTCondor knob one of `profiles` sets that the
    release the site's VMs were made from does not know: no entry in its parameter table
    while another kept release has one. HTCondor takes any name without a word, so such a
    knob would silently do nothing. A scaled profile named before its k sets its base's
    knobs. Nothing is refused without a kept record of that box (a box rebuilt from another
    recipe has another name, and no record until one is kept)."""
    box_name = box_choice.booted_box(site)
    records = load_all(root)
    record = next((r for r in records if box_name and r.get("box") == box_name), None)
    if record is None:
        return
    others = [r for r in records if r is not record]
    for profile in profiles:
        profile = profile.base if isinstance(profile, scaled_profiles.AtRunTime) else profile
        for role in sorted(profile.roles):
            for knob in profile.section(role, "condor"):
                if record.get("defaults", {}).get(knob) is not None:
                    continue
                knower = next((r for r in others if r.get("defaults", {}).get(knob) is not None), None)
                if knower is not None:
                    raise ConfigError(profile.source, f"roles.{role}.condor.{knob}",
                                      f"unknown to {release_name(record.get('versions'))} on box {box_name} "
                                      f"(not in its parameter table; {release_name(knower.get('versions'))} has it)")
