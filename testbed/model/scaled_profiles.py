"""Scaled profiles: a tuning profile's bandwidth-like limits times a factor k, for a scale
model of a faster site (docs/scaling.md).

Under TCG the emulated CPU caps HTCondor's file transfer at a few MB/s, so a TCP window
sized for a 10 Gb/s site never limits a transfer here. A scaled profile keeps the RTTs and
multiplies every limit that is a number of bytes in flight by k = (this site's HTCondor
rate) / (the paper's), so that window / RTT against the rate the jobs demand is the paper's
ratio at every RTT, the way a wind tunnel keeps its dimensionless numbers:

- `net.core.rmem_max`, `net.core.wmem_max` (the caps on a buffer an application sets):
  times k, never below the kernel's default SCALED_CAP_FLOOR (HTCondor sets no buffer on a
  transfer socket, so these caps never bound its window, while every netlink socket needs
  them);
- `net.ipv4.tcp_rmem`, `net.ipv4.tcp_wmem` (min default max): the max field (the cap of
  the kernel's autotuning, what limits one stream's window) times k; the min field kept (a
  floor under memory pressure, not a window); the default field kept but never above the
  scaled max. The default is the buffer a connection starts with: during its first round
  trips the sender's initial congestion window (10 segments, a packet count that no
  scale changes) limits it, as it did on the paper's site, so scaling it by k would make
  the start slower than the paper's; left above the scaled max it would lift the cap
  instead, because autotuning only grows a buffer and never shrinks it to the max;
- every scaled value at least SCALED_BUFFER_FLOOR bytes and the min field;
- a WAN link's rate limit (`rate_mbit`, 0 being none): times k;
- kept as they are: counts and flags (`netdev_max_backlog` counts packets queued per CPU,
  filled and drained by the same emulated CPU that sets k; `tcp_mtu_probing`), HTCondor's
  transfer concurrency, md and XRootD knobs, and the WAN links' RTT, jitter and loss.

A scaled profile is named `<base>-scaled` in rows and records; `<base>@k=<k>` names it
fully, and `profiles.load` rebuilds it from that (the site's record of the profile in
force, `testbed profile apply table4-default@k=0.009`).
"""
import math
import re

from testbed.model import profiles
from testbed.model.constants import SCALED_BUFFER_FLOOR, SCALED_CAP_FLOOR
from testbed.model.errors import ConfigError

SUFFIX = "-scaled"
SPEC = re.compile(r"^(?P<base>[A-Za-z0-9][A-Za-z0-9._-]*)@k=(?P<k>[^@\s]+)$")
CAPS = ("net.core.rmem_max", "net.core.wmem_max")      # one number each: times k
TRIPLES = ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")   # min default max: max times k
SIGNIFICANT = 4   # digits of k kept: the name, the manifest and the values agree exactly


def scaled_name(base):
    """'table4-default' -> 'table4-default-scaled' (the rows' and records' name)."""
    return f"{base}{SUFFIX}"


def base_name(name):
    """'table4-default-scaled' -> 'table4-default'; None for a name that is not a scaled one."""
    name = str(name)
    return name[:-len(SUFFIX)] if name.endswith(SUFFIX) and len(name) > len(SUFFIX) else None


def round_k(k):
    """k to SIGNIFICANT digits (what a run records and names the profile with)."""
    return float(f"{float(k):.{SIGNIFICANT}g}")


def spec(base, k):
    """The full name a scaled profile is loaded by: 'table4-default@k=0.009'."""
    return f"{base}@k={round_k(k):g}"


def parse_spec(text):
    """'table4-default@k=0.009' -> ('table4-default', 0.009); None when `text` is not a spec;
    ConfigError when its k is not a positive number."""
    m = SPEC.match(str(text))
    if not m:
        return None
    try:
        k = float(m.group("k"))
    except ValueError:
        k = float("nan")
    check_k(k, text)
    return m.group("base"), k


def check_k(k, where="scaled profile"):
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k <= 0:
        raise ConfigError(where, "k", f"must be a positive number (this site's rate over the paper's), got {k!r}")


def _bytes(value, k, floor):
    return max(int(round(float(value) * k)), floor)


def scale_sysctl(key, value, k):
    """(scaled value, rule) of one sysctl: the value unchanged with rule 'kept' unless it is a
    buffer limit (CAPS, TRIPLES; see the module's documentation)."""
    if key in CAPS:
        floor = max(min(int(value), SCALED_CAP_FLOOR), SCALED_BUFFER_FLOOR)
        scaled = _bytes(value, k, floor)
        return scaled, "x k" + (f", floor {floor}" if scaled == floor else "")
    if key in TRIPLES:
        fields = str(value).split()
        if len(fields) != 3:
            raise ConfigError(key, "", f"must be three numbers 'min default max', got {value!r}")
        low, default, high = (int(f) for f in fields)
        floor = max(low, SCALED_BUFFER_FLOOR)
        top = _bytes(high, k, floor)
        rule = "max x k" + (f", floor {floor}" if top == floor else "")
        if default > top:
            rule += ", default lowered to the max"
        return f"{low} {min(default, top)} {top}", rule
    return value, "kept"


def scale_links(wan, k):
    """The profile's WAN links with each rate limit times k (RTT, jitter and loss kept)."""
    return [dict(link, rate_mbit=float(link["rate_mbit"]) * k) if float(link.get("rate_mbit") or 0) > 0
            else dict(link) for link in wan]


def changes(profile, k):
    """[{role, key, value, scaled, rule}] for every sysctl the profile sets, per role, then
    every WAN link's rate limit (role `wan`, key `A<->B rate_mbit`)."""
    out = []
    for role in sorted(profile.roles, key=profiles.PROFILE_ROLES.index):
        for key, value in sorted(profile.section(role, "sysctl").items()):
            scaled, rule = scale_sysctl(key, value, k)
            out.append({"role": role, "key": key, "value": value, "scaled": scaled, "rule": rule})
    for link, made in zip(profile.wan, scale_links(profile.wan, k)):
        if link != made:
            out.append({"role": "wan", "key": f"{'<->'.join(link['between'])} rate_mbit",
                        "value": link["rate_mbit"], "scaled": made["rate_mbit"], "rule": "x k"})
    return out


def scaled(profile, k):
    """The profile `profile` with its buffer limits times k (rounded to SIGNIFICANT digits),
    named `<name>-scaled`; everything else as it is. ConfigError for a k that is not positive
    or a profile that is itself scaled."""
    check_k(k, f"{profile.name}@k")
    if profile.derived:
        raise ConfigError(profile.name, "k", f"is already scaled ({profile.spec}); scale its base instead")
    k = round_k(k)
    roles = {role: {section: dict(values) for section, values in sections.items()}
             for role, sections in profile.roles.items()}
    for row in changes(profile, k):
        if row["role"] != "wan":
            roles[row["role"]]["sysctl"][row["key"]] = row["scaled"]
    name = scaled_name(profile.name)
    return profiles.Profile(
        name=name, source=profile.source,
        description=f"{profile.description} Socket buffer limits x k = {k:g} (scale model, docs/scaling.md).",
        reference=f"{profile.reference}; scaled by k = {k:g}", chain=[name] + list(profile.chain),
        roles=roles, wan=scale_links(profile.wan, k), derived={"base": profile.name, "k": k},
        declares=dict(profile.declares))


def load(name_or_spec):
    """A profile by name or path, or the scaled profile a spec names ('table4-default@k=0.009');
    a `<base>-scaled` name without its k is refused in one line saying where k comes from."""
    found = load_spec(name_or_spec)
    if found is not None:
        return found
    path = profiles.profile_path(name_or_spec)
    base = base_name(path.stem)
    if base and not path.exists() and profiles.profile_path(base).exists():
        raise ConfigError(path, "", f"a scaled profile: its k comes from a run's saturation test (E1 "
                                    f"measures it); name k to use it here, e.g. {base}@k=0.01")
    return profiles.load(name_or_spec)


def load_spec(text):
    """The scaled profile a spec names ('table4-default@k=0.009'), or None for another name."""
    parsed = parse_spec(text)
    if parsed is None:
        return None
    base, k = parsed
    return scaled(profiles.load(base), k)


class AtRunTime:
    """A scaled profile named before its k is known (`testbed run e1 --profile
    table4-default-scaled`): what the run's manifest holds of it until the run's saturation
    test gives k, and the experiment puts the profile itself there."""

    def __init__(self, name):
        self.name = name
        self.base = profiles.load(base_name(name))

    def as_dict(self):
        return {"name": self.name, "scaled_from": self.base.name, "k": None,
                "note": "socket buffer limits of the base x k, k from this run's saturation test "
                        "(the manifest's scale_model once measured)",
                "base": self.base.as_dict()}


def for_run(name):
    """A profile a run names: a file's, or for `<base>-scaled` without a file of its own an
    AtRunTime over the base's (ConfigError when neither exists)."""
    base = base_name(name)
    if base and not profiles.profile_path(name).exists() and profiles.profile_path(base).exists():
        return AtRunTime(name)
    return profiles.load(name)
