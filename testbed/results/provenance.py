"""What a run's trials were measured with, and whether two runs' trials may be judged together.

A trial's provenance is its run's manifest: the run id, the git revision, a hash of the
code that measured it (`code.measurement`), the resolved parameters, the box and the
package versions (HTCondor, XRootD, the guest kernel, QEMU), kvm or tcg and the host's
cores. Trials from two runs are judged together (`reference save --add-trials`, `--merge`)
only when every one of those fields is the same.

The measurement code is every file that decides what a run measures, hashed as it is on
disk when the run starts: the `testbed` package but its judging and reporting modules, the
Robot suites (without their generated claim rows, which the paper files make), the
libraries, provisioning, profiles, topologies, the Vagrantfile and the requirements. So a
claim re-declared after a run, or a change to how verdicts are printed, leaves the hash as
it was; a change to anything a measurement runs does not.
"""
import hashlib
import re
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.model.errors import ConfigError

MEASURED_TREES = ("testbed", "robot", "provision", "profiles", "topologies")
MEASURED_FILES = ("Vagrantfile", "requirements.txt")
# judging and reporting: they read a run's records, they never change them
JUDGING = ("testbed/results/verdict.py", "testbed/results/compare.py", "testbed/results/reference.py",
           "testbed/results/figures.py", "testbed/results/provenance.py", "testbed/report/", "testbed/cli/report_commands.py")
CLAIM_ROWS = re.compile(r"^# BEGIN GENERATED ROWS claims .*?^# END GENERATED ROWS claims$", re.M | re.S)
# the manifest fields two runs' trials share before they are judged together, as dotted paths
SAME_FIELDS = ("suite", "scale", "topology.name", "topology.box", "profiles", "accel", "git_revision",
               "code.measurement", "experiment_parameters", "versions.condor", "versions.xrootd",
               "versions.kernel", "versions.os", "versions.qemu", "versions.condor_patches", "host.cores")


def measured_files(root=PROJECT_ROOT):
    """The files whose contents the measurement hash covers, sorted, relative to `root`."""
    root = Path(root)
    found = [root / name for name in MEASURED_FILES if (root / name).is_file()]
    for tree in MEASURED_TREES:
        found += [p for p in (root / tree).rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and not p.name.endswith(".pyc")]
    rel = sorted(p.relative_to(root).as_posix() for p in found)
    return [r for r in rel if not any(r == j or (j.endswith("/") and r.startswith(j)) for j in JUDGING)]


def measurement_hash(root=PROJECT_ROOT):
    """sha256 (first 16 hex digits) over the measurement code's paths and contents."""
    digest = hashlib.sha256()
    for rel in measured_files(root):
        data = (Path(root) / rel).read_bytes()
        if rel.endswith(".robot"):
            data = CLAIM_ROWS.sub("", data.decode("utf-8", "replace")).encode()
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:16]


def field_of(manifest, dotted):
    """The value at a dotted path of a manifest (None where any part is missing)."""
    value = manifest
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def differences(kept, new):
    """[(field, the kept run's value, the new run's)] for every SAME_FIELDS entry that differs."""
    return [(f, field_of(kept, f), field_of(new, f)) for f in SAME_FIELDS if field_of(kept, f) != field_of(new, f)]


def refuse_mixed(kept, new, source):
    """ConfigError naming the first field that differs between two runs' manifests: their
    trials are not one measurement and are never judged together."""
    found = differences(kept, new)
    if found:
        name, a, b = found[0]
        more = f" (and {len(found) - 1} more: {', '.join(f for f, _a, _b in found[1:])})" if len(found) > 1 else ""
        raise ConfigError(source, name, f"{b!r} where the reference has {a!r}{more}: trials measured by other "
                                        f"code or on another site are judged in a run of their own")
