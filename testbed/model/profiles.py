"""Tuning profiles: YAML data files that set sysctls, HTCondor knobs, md knobs,
XRootD cache knobs and WAN links per role, with `extends:` inheritance.

The same files are valid Robot Framework variable files (`robot --variablefile
profiles/wan-tuned.yaml`): their top-level keys become suite variables.
"""
import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.model.errors import ConfigError
from testbed.model.schema import Reader, load_yaml

PROFILE_DIR = PROJECT_ROOT / "profiles"
PROFILE_ROLES = ("all", "submit", "cm", "ccb", "worker", "dtn", "origin")
SECTIONS = ("sysctl", "condor", "md", "xrootd_cache")
SYSCTL_KEY = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")
CONDOR_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
SIZE = re.compile(r"^\d+[kmgKMG]?$")
MD_KNOBS = {"stripe_cache_size": (17, 32768), "group_thread_cnt": (0, 64)}
XROOTD_CACHE_KNOBS = ("ram", "blocksize", "prefetch", "diskusage")
CONDOR_FORBIDDEN = {"ALLOW_WRITE", "ALLOW_ADMINISTRATOR", "ALLOW_DAEMON", "SEC_PASSWORD_FILE",
                    "ENABLE_KERNEL_TUNING", "DAEMON_LIST", "CONDOR_HOST", "TRUST_DOMAIN"}


@dataclass
class Profile:
    name: str
    source: Path
    description: str = ""
    reference: str = ""
    chain: list = field(default_factory=list)  # names, most derived first
    roles: dict = field(default_factory=dict)  # role -> section -> key -> value
    wan: list = field(default_factory=list)

    def section(self, role, section):
        return dict(self.roles.get(role, {}).get(section, {}))

    def for_host(self, host_roles, section):
        """Values for a host: `all` first, then each of its roles in order."""
        merged = self.section("all", section)
        for role in host_roles:
            merged.update(self.section(role, section))
        return merged

    def as_dict(self):
        return {"name": self.name, "description": self.description, "reference": self.reference,
                "extends_chain": list(self.chain), "roles": copy.deepcopy(self.roles),
                "wan": copy.deepcopy(self.wan)}


def profile_path(name_or_path):
    text = str(name_or_path)
    if "/" in text or text.endswith((".yaml", ".yml")):
        return Path(text)
    return PROFILE_DIR / f"{text}.yaml"


def _check_value(reader, section, key, value):
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        raise reader.error(key, f"must be a number or a string, got {value!r}")
    if section == "sysctl":
        if not SYSCTL_KEY.match(key):
            raise reader.error(key, "not a sysctl name (like net.core.rmem_max)")
        if isinstance(value, str) and not re.fullmatch(r"[0-9 \t-]+", value):
            raise reader.error(key, f"sysctl values here are numbers or number lists, got {value!r}")
    elif section == "condor":
        if not CONDOR_KEY.match(key):
            raise reader.error(key, "not an HTCondor configuration name")
        if key.upper() in CONDOR_FORBIDDEN:
            raise reader.error(key, "is owned by the topology and security set-up; profiles may not set it")
    elif section == "md":
        if key not in MD_KNOBS:
            raise reader.error(key, f"unknown md knob (known: {', '.join(MD_KNOBS)})")
        lo, hi = MD_KNOBS[key]
        if not isinstance(value, int) or not lo <= value <= hi:
            raise reader.error(key, f"must be an integer in {lo}..{hi}, got {value!r}")
    elif section == "xrootd_cache":
        if key not in XROOTD_CACHE_KNOBS:
            raise reader.error(key, f"unknown cache knob (known: {', '.join(XROOTD_CACHE_KNOBS)})")
        if key in ("ram", "blocksize") and not SIZE.match(str(value)):
            raise reader.error(key, f"must be a size like 512m or 1g, got {value!r}")
        if key == "prefetch" and (not isinstance(value, int) or not 0 <= value <= 128):
            raise reader.error(key, f"must be an integer in 0..128, got {value!r}")
        if key == "diskusage" and not re.fullmatch(r"0?\.\d+ 0?\.\d+", str(value)):
            raise reader.error(key, f"must be 'LOW HIGH' fractions like '0.90 0.95', got {value!r}")


def _parse_roles(reader):
    roles = {}
    reader.only(set(PROFILE_ROLES))
    for role, body in reader.data.items():
        r = reader.sub(role)
        r.only(set(SECTIONS))
        roles[role] = {}
        for section in r.data:
            s = r.sub(section)
            for key, value in s.data.items():
                _check_value(s, section, str(key), value)
            roles[role][section] = {str(k): v for k, v in s.data.items()}
    return roles


def _merge(base, derived):
    merged = copy.deepcopy(base)
    for role, sections in derived.items():
        for section, values in sections.items():
            merged.setdefault(role, {}).setdefault(section, {}).update(values)
    return merged


def load(name_or_path, _seen=()):
    path = profile_path(name_or_path)
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in PROFILE_DIR.glob("*.yaml")))
        raise ConfigError(path, "", f"no such profile (known: {known})")
    r = Reader(load_yaml(path), path)
    r.only({"name", "description", "reference", "extends", "roles", "wan"})
    name = r.str("name", path.stem)
    if name in _seen:
        raise r.error("extends", f"inheritance loop: {' -> '.join(_seen + (name,))}")
    roles = _parse_roles(r.sub("roles"))
    wan = r.list("wan", [])
    if wan:
        from testbed.network.netem import parse_links  # local import: netem imports profiles' users
        parse_links(wan, path, "wan")
    chain = [name]
    if "extends" in r.data:
        parent = load(r.str("extends"), _seen + (name,))
        roles = _merge(parent.roles, roles)
        wan = wan or parent.wan
        chain += parent.chain
    return Profile(name=name, source=path, description=r.data.get("description", ""),
                   reference=r.data.get("reference", ""), chain=chain, roles=roles, wan=wan)


def diff(a, b):
    """Rows (role, section, key, value in a, value in b) where the two differ."""
    rows = []
    roles = sorted(set(a.roles) | set(b.roles), key=lambda x: PROFILE_ROLES.index(x))
    for role in roles:
        for section in SECTIONS:
            va, vb = a.section(role, section), b.section(role, section)
            for key in sorted(set(va) | set(vb)):
                if va.get(key) != vb.get(key):
                    rows.append((role, section, key, va.get(key, "-"), vb.get(key, "-")))
    return rows


def flatten(profile):
    """Rows (role, section, key, value) of everything the profile sets."""
    return [(role, section, key, value)
            for role in sorted(profile.roles, key=PROFILE_ROLES.index)
            for section in SECTIONS
            for key, value in sorted(profile.section(role, section).items())]


def normalise_sysctl(value):
    """'4096  87380 6291456' and the kernel's tab-separated form compare equal."""
    return " ".join(str(value).split())
