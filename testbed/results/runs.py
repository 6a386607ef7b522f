"""Results folders: one per run, `results/<UTC time>-<suite>-<profiles>/`.

    manifest.json   what ran where: topology (contents and file), full profile contents,
                    scale, typed parameters (`--set` overrides and all the suite's), versions,
                    git revision, the measurement code's hash (`code`, results/provenance.py),
                    kvm|tcg, host cores/RAM, start/end, status, trials run and declared,
                    the DTN's RAID members (`disks`: count, level, chunk, limits,
                    host cache mode; testbed/machines/disks.py), the host's noise
                    (`quiet`: the guests paused, kept running and pinned, the
                    pinning replaced, what the resume did; harness/quiet.py),
                    E1's scale model (`scale_model`: k, the rates it came from, every
                    scaled value; experiments/e1/e1_scale.py), and `existing_hosts`: each
                    existing host's OS, kernel, cores, CPU model, RAM, free disk,
                    virtualisation and time sync as read off it (testbed/machines/existing.py),
                    and `placement`: the hypervisor (name and libvirt URI) of every VM, or
                    the SSH target of an existing host (model/hypervisors.py)
    metrics.jsonl   one JSON record per measurement (name, value, unit, params)
    output.xml ...  Robot Framework's own output

The manifest is replaced atomically (write + rename); each metric is one
appended line flushed to disk at once, so an interrupted run keeps every point
it finished and says `interrupted` (or still `running` if it was killed).
"""
import argparse
import contextlib
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.model.clock import utc_iso, utc_stamp
from testbed.model.errors import ConfigError, TestbedError
from testbed.results import provenance

RESULTS_ROOT = PROJECT_ROOT / "results"
REFERENCE_ROOT = RESULTS_ROOT / "reference"    # the kept runs (testbed/results/reference.py)
STATUSES = ("running", "complete", "interrupted", "failed")
METRIC_NAME = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)*$")


def folder_name(suite, profiles, ts=None):
    label = "+".join(profiles) if profiles else "default"
    return f"{utc_stamp(ts)}-{suite}-{label}"


def write_json_atomic(path, data):
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=2, sort_keys=True, default=str)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def git_revision(root=PROJECT_ROOT):
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (rev or "unknown") + ("-dirty" if dirty else "")


def host_facts():
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    qemu = ""
    try:
        out = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True,
                             timeout=10).stdout
        qemu = out.splitlines()[0].replace("QEMU emulator version ", "") if out else ""
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {"cores": os.cpu_count(), "ram_mb": mem_kb // 1024, "kernel": platform.release(),
            "qemu": qemu}


def validate_metric(name, value, unit, params):
    if not isinstance(name, str) or not METRIC_NAME.match(name):
        raise ConfigError("metrics.jsonl", "name", f"{name!r} is not a metric name like e1.rate")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError("metrics.jsonl", name, f"value must be a finite number, got {value!r}")
    if not isinstance(unit, str):
        raise ConfigError("metrics.jsonl", name, f"unit must be a string, got {unit!r}")
    for key, val in params.items():
        if isinstance(val, (dict, list)):
            raise ConfigError("metrics.jsonl", f"{name}.{key}", "parameters are scalars")


def check_record(rec, where):
    """ConfigError naming `where` (file:line) unless `rec` is a metric record as `Run.record`
    writes it: a metric name, a finite number, a unit, scalar parameters (a trial >= 1)."""
    if not isinstance(rec, dict):
        raise ConfigError(where, "", f"a record is a JSON object, not {type(rec).__name__}")
    missing = [k for k in ("name", "value") if k not in rec]
    if missing:
        raise ConfigError(where, "", f"the record has no {' or '.join(missing)}")
    rec.setdefault("unit", "")
    rec.setdefault("params", {})
    if not isinstance(rec["params"], dict):
        raise ConfigError(where, "params", f"must be an object, not {type(rec['params']).__name__}")
    try:
        validate_metric(rec["name"], rec["value"], rec["unit"], rec["params"])
    except ConfigError as exc:
        raise ConfigError(where, exc.field, exc.problem) from None
    trial = rec["params"].get("trial", 1)
    if isinstance(trial, bool) or not isinstance(trial, int) or trial < 1:
        raise ConfigError(where, f"{rec['name']}.trial", f"must be a whole number >= 1, not {trial!r}")


# The manifest fields readers rely on, and their types; any may be absent (a manifest of an
# older version, a run killed before it was closed), none may have another type
MANIFEST_TYPES = {"suite": str, "profiles": list, "scale": str, "parameters": dict,
                  "experiment_parameters": dict, "topology": (dict, str), "profile_contents": dict,
                  "accel": str, "git_revision": str, "code": dict, "host": dict, "versions": dict,
                  "start": str, "end": (str, type(None)), "status": str, "trials": int, "trial": int,
                  "trials_declared": int, "selection": list, "disks": dict, "quiet": dict,
                  "placement": dict, "scale_model": dict, "kept_from": str, "point_seconds": list, "site": dict}


def check_manifest(data, path):
    """ConfigError naming the manifest and the field unless `data` has the types
    MANIFEST_TYPES gives, a known status and trial counts >= 1."""
    if not isinstance(data, dict):
        raise ConfigError(path, "", f"a manifest is a JSON object, not {type(data).__name__}")
    for key, kind in MANIFEST_TYPES.items():
        if key not in data:
            continue
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise ConfigError(path, key, f"must be {names.replace('NoneType', 'null')}, "
                                         f"not {type(value).__name__} {value!r:.40}")
    if "status" in data and data["status"] not in STATUSES:
        raise ConfigError(path, "status", f"{data['status']!r} is not one of {', '.join(STATUSES)}")
    for key in ("trials", "trial", "trials_declared"):
        if key in data and data[key] < 1:
            raise ConfigError(path, key, f"must be >= 1, not {data[key]}")
    if any(not isinstance(p, str) for p in data.get("profiles", [])):
        raise ConfigError(path, "profiles", "must be a list of profile names")


def write_synced(path, text):
    """Write `text` to `path` and sync it to disk (mode 0644)."""
    with open(path, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(path, 0o644)


def swap_in(tmp, target):
    """Rename the finished folder `tmp` to `target`; an older `target` is renamed aside
    first (and back if the second rename fails), then removed."""
    if not target.exists():
        os.rename(tmp, target)
        return
    old = target.with_name(f".{target.name}.old{os.getpid()}")
    os.rename(target, old)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_records(path, records):
    """Write metric records to `path` as JSON lines (keys sorted), synced."""
    write_synced(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


@contextlib.contextmanager
def folder_written_whole(target):
    """A hidden folder beside `target` to fill: when the block ends it replaces `target`
    (swap_in); on any failure it is removed and `target` stays as it was."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp", dir=target.parent))
    try:
        os.chmod(tmp, 0o755)
        yield tmp
        swap_in(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


class Run:
    """One results folder. Create it with `Run.create`, reopen with `Run(path)`."""

    def __init__(self, path, trial=None):
        """`trial`: the trial (1, 2, ...) of a repeated run this process records for: its
        records carry `trial` and `metrics()` returns that trial's records only (what a
        suite's summary row computes from). Without it, every record of the run."""
        self.path = Path(path)
        self.trial = trial
        self.manifest_path = self.path / "manifest.json"
        self.metrics_path = self.path / "metrics.jsonl"

    @classmethod
    def create(cls, suite, profiles, topology, profile_contents, accel, scale="quick",
               parameters=None, root=None, path=None, disks=None, experiment_parameters=None, placement=None,
               site=None):
        root = Path(root or RESULTS_ROOT)
        root.mkdir(parents=True, exist_ok=True)
        if path is None:
            path = root / folder_name(suite, profiles)
            n = 1
            while path.exists():
                n += 1
                path = root / f"{folder_name(suite, profiles)}-{n}"
        run = cls(path)
        run.path.mkdir(parents=True, exist_ok=True)
        manifest = {"suite": suite, "profiles": list(profiles), "scale": scale,
                    "parameters": dict(parameters or {}), "topology": topology,
                    "profile_contents": profile_contents, "accel": accel,
                    "git_revision": git_revision(), "code": {"measurement": provenance.measurement_hash()},
                    "host": host_facts(), "versions": {},
                    "start": utc_iso(), "end": None, "status": "running"}
        if disks is not None:
            manifest["disks"] = disks
        if experiment_parameters is not None:
            manifest["experiment_parameters"] = experiment_parameters
        if placement is not None:
            manifest["placement"] = placement
        if site is not None:
            manifest["site"] = site
        write_json_atomic(run.manifest_path, manifest)
        run.metrics_path.touch()
        return run

    def manifest(self):
        """The manifest, its fields' types checked (check_manifest): a ConfigError naming the
        field when one is wrong. Fields a manifest of an older version lacks stay absent."""
        try:
            data = json.loads(self.manifest_path.read_text())
        except FileNotFoundError:
            raise ConfigError(self.path, "manifest.json", "not a results folder (no manifest)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(self.manifest_path, "", f"invalid JSON: {getattr(exc, 'msg', exc)}") from None
        check_manifest(data, self.manifest_path)
        return data

    def update(self, **fields):
        data = self.manifest()
        data.update(fields)
        write_json_atomic(self.manifest_path, data)
        return data

    def finish(self, status, **fields):
        """Close the manifest with `status` and its end time, and any other `fields` with them."""
        if status not in STATUSES:
            raise ValueError(status)
        return self.update(status=status, end=utc_iso(), **fields)

    def record(self, name, value, unit="", **params):
        """Append one measurement; returns the record."""
        if self.trial is not None:
            params = dict(params, trial=self.trial)
        validate_metric(name, value, unit, params)
        rec = {"name": name, "value": value, "unit": unit, "params": params, "time": utc_iso()}
        line = json.dumps(rec, sort_keys=True) + "\n"
        fd = os.open(self.metrics_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return rec

    def keep(self, relpath, data):
        """A JSON document beside the metrics, under `kept/` (`kept/trialN/` in a repeated
        run): the raw material metrics were computed from. Written atomically; its path."""
        path = self.path / "kept" / (f"trial{self.trial}" if self.trial else "") / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, data)
        return path

    def metrics(self):
        """Every record, each checked (check_record): a damaged line is a ConfigError naming
        file:line and what is wrong, except a last line cut short (a crash while appending),
        which is skipped with a warning on stderr."""
        out = []
        if not self.metrics_path.exists():
            return out
        try:
            text = self.metrics_path.read_text()
        except UnicodeDecodeError:
            raise ConfigError(self.metrics_path, "", "not UTF-8 text") from None
        lines = text.splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{self.metrics_path}:{number}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                if number == len(lines) and not text.endswith("\n"):
                    print(f"testbed: {where}: the last line is cut short (a run stopped while writing it); "
                          f"skipped", file=sys.stderr)
                    continue
                raise ConfigError(where, "", f"not a JSON record: {exc.msg}") from None
            check_record(rec, where)
            if self.trial is None or rec["params"].get("trial", 1) == self.trial:
                out.append(rec)
        return out

    @property
    def label(self):
        return self.path.name


class RunInterrupted(KeyboardInterrupt):
    """A run a signal stopped, its manifest closed as interrupted: `run` for its report and
    `lines` (what the site was left with, how the run ended) to say after it."""

    def __init__(self, run, lines):
        super().__init__(lines[-1])
        self.run, self.lines = run, lines


def _suite_of(manifest_path):
    """The suite a manifest names, or None when it cannot be read (said on stderr): one
    damaged folder does not hide the others from `latest-<suite>`."""
    try:
        return Run(manifest_path.parent).manifest().get("suite")
    except (OSError, TestbedError) as exc:
        print(f"testbed: skipped {manifest_path.parent.name}: {exc}", file=sys.stderr)
        return None


def resolve(ref, root=None):
    """A run given as a path, a folder name under results/, or `latest[-suite]`."""
    root = Path(root or RESULTS_ROOT)
    text = str(ref)
    if text.startswith("latest"):
        suite = text[len("latest-"):] if text.startswith("latest-") else None
        runs = sorted(p for p in root.glob("*/manifest.json") if suite is None or _suite_of(p) == suite)
        if not runs:
            raise ConfigError(root, ref, "no runs found")
        return Run(runs[-1].parent)
    path = Path(text)
    if not path.exists() and (root / text).exists():
        path = root / text
    if not (path / "manifest.json").exists():
        raise ConfigError(path, "manifest.json", "not a results folder (no manifest.json)")
    return Run(path)


def load_for_benchmark(suite, title, argv=None):
    """The prelude of the benchmarks that print a run's figures (benchmarks/e3_fax.py, e4_hpc.py,
    faults.py): parse `[RUN ...]` (results folders, default latest-<suite>) from `argv` (default
    the command line) and resolve them; print `<title> figures from <runs> (<scale> scale,
    status <status>)` from the last run's manifest. Returns every run's metric records, in
    order, or None when a run does not resolve (the error is on stderr; the script exits 2)."""
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs="*", default=[f"latest-{suite}"], help=f"results folders (default latest-{suite})")
    args = p.parse_args(argv)
    try:
        chosen = [resolve(r) for r in args.runs]
    except TestbedError as exc:
        print(f"{suite} benchmark: {exc}", file=sys.stderr)
        return None
    records = [rec for run in chosen for rec in run.metrics()]
    m = chosen[-1].manifest()
    print(f"{title} figures from {', '.join(r.label for r in chosen)} ({m.get('scale')} scale, status {m.get('status')})")
    return records


def print_benchmark(suite, title, render, argv=None):
    """A whole benchmark that prints one text from a run's records (benchmarks/e3_fax.py,
    e5_scale.py): the runs as `load_for_benchmark` reads them, then `render(records)`.
    Exit code 2 when a run does not resolve, 1 when the runs hold no `<suite>.` metric."""
    records = load_for_benchmark(suite, title, argv)
    if records is None:
        return 2
    print(render(records))
    return 0 if any(r["name"].startswith(f"{suite}.") for r in records) else 1


def matching(records, name, **params):
    """The records of metric `name` whose params include `params` (values compared as text:
    Robot records 0 and "0" alike)."""
    return [r for r in records if r["name"] == name
            and all(str(r.get("params", {}).get(k)) == str(v) for k, v in params.items())]


def trials_count(manifest):
    """'3', or for an interrupted run the trial it had reached: '2 of 3 reached' (the
    manifest does not say whether that trial ended before the interrupt; the verdicts
    count each claim's trials from the records)."""
    asked = manifest.get("trials") or 1
    if manifest.get("status") == "interrupted":
        return f"{manifest.get('trial') or asked} of {asked} reached"
    return str(asked)


def trials_text(manifest):
    """'3 trials', '1 trial', or 'trial 2 of 3 reached' for an interrupted run."""
    count = trials_count(manifest)
    return f"trial {count}" if count.endswith("reached") else f"{count} trial{'s' * (count != '1')}"


def last_value(records, name, **params):
    """The value of the last record `matching` gives, or None."""
    found = matching(records, name, **params)
    return found[-1]["value"] if found else None
