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
from testbed.model.schema import Reader, finite, load_yaml

PROFILE_DIR = PROJECT_ROOT / "profiles"
PROFILE_ROLES = ("all", "submit", "cm", "ccb", "worker", "dtn", "origin")
SECTIONS = ("sysctl", "condor", "md", "xrootd_cache")
SYSCTL_KEY = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")
CONDOR_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
SIZE = re.compile(r"^\d+[kmgKMG]?$")
MD_KNOBS = {"stripe_cache_size": (17, 32768), "group_thread_cnt": (0, 64)}
XROOTD_CACHE_KNOBS = ("ram", "blocksize", "prefetch", "diskusage")
PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Knobs the topology or the security set-up owns (HTCondor names are case-insensitive).
CONDOR_FORBIDDEN = {"ALLOW_WRITE", "ALLOW_ADMINISTRATOR", "ALLOW_DAEMON", "SEC_PASSWORD_FILE",
                    "ENABLE_KERNEL_TUNING", "DAEMON_LIST", "CONDOR_HOST", "TRUST_DOMAIN",
                    "COLLECTOR_HOST", "UID_DOMAIN", "TRUST_UID_DOMAIN", "NETWORK_INTERFACE",
                    "ENABLE_RUNTIME_CONFIG", "ENABLE_PERSISTENT_CONFIG", "LOCAL_CONFIG_FILE",
                    "LOCAL_CONFIG_DIR", "REQUIRE_LOCAL_CONFIG_FILE", "QUEUE_SUPER_USERS",
                    "QUEUE_ALL_USERS_TRUSTED", "CERTIFICATE_MAPFILE", "CCB_ADDRESS"}
# Security-weakening knob names, with or without a SUBSYS./LOCALNAME. prefix: (pattern, problem).
_PREFIX = r"(?:[A-Z0-9_]+\.)*"
CONDOR_SECURITY_KNOBS = [
    (re.compile(_PREFIX + r"(ALLOW|DENY)_.*"), "authorization lists are owned by the security set-up"),
    (re.compile(_PREFIX + r"HOST(ALLOW|DENY).*"), "authorization lists are owned by the security set-up"),
    (re.compile(_PREFIX + r"SETTABLE_ATTRS.*"), "remote configuration is owned by the security set-up"),
    (re.compile(r"[A-Z0-9_.]+\.SEC_.*"), "per-daemon security settings are owned by the security set-up"),
    (re.compile(r"SEC_.*AUTHENTICATION.*"), "authentication is owned by the security set-up"),
]
# The SEC_ knobs a profile may set; any other SEC_ knob (tokens, passwords,
# negotiation, ...) belongs to the security set-up.
SEC_ALLOWED = re.compile(r"SEC_[A-Z_]+_(CRYPTO_METHODS|ENCRYPTION|INTEGRITY|SESSION_DURATION|SESSION_LEASE)")
SEC_PROTECTION = re.compile(r"SEC_[A-Z_]+_(ENCRYPTION|INTEGRITY)")
# transfer-plain's exception (see profiles/transfer-plain.yaml): authentication stays
# REQUIRED, but both ends of a file transfer may agree on no encryption/integrity.
SEC_OPTIONAL_ALLOWED = {"SEC_DEFAULT_ENCRYPTION", "SEC_DEFAULT_INTEGRITY"}
# What a profile must declare (`declares: {WHAT: why}`) before it may set such knobs: the
# declaration is shown by `profile show`/`profile diff` and kept in every run's manifest.
# Knobs that name a program HTCondor runs as root in the guests: daemon binaries, wrappers,
# hooks, cron jobs, plugins and the folders binaries come from.
_DAEMONS = ("MASTER|SCHEDD|STARTD|STARTER|SHADOW|COLLECTOR|NEGOTIATOR|SHARED_PORT|CREDD|HAD|"
            "REPLICATION|PROCD|KBDD|GRIDMANAGER|JOB_ROUTER|DEFRAG|ROOSTER|TRANSFERD|CKPT_SERVER")
RUNS_COMMANDS = re.compile(_PREFIX + r"((" + _DAEMONS + r")|.*_EXECUTABLE|.*JOB_WRAPPER|.*_HOOK_.*|.*HOOK_KEYWORD"
                           r"|.*_CRON_.*|.*_PLUGINS?|.*_GAHP|MAIL|PREEN|SBIN|BIN|LIBEXEC|RELEASE_DIR"
                           r"|DOCKER|SINGULARITY|APPTAINER|.*_PROXY_PROGRAM|.*_SCRIPT)")
DECLARATIONS = {"runs_commands": "sets knobs that name a program HTCondor runs as root",
                "weakens_encryption": "lets daemons agree on no encryption or integrity check"}


@dataclass
class Profile:
    name: str
    source: Path
    description: str = ""
    reference: str = ""
    chain: list = field(default_factory=list)  # names, most derived first
    roles: dict = field(default_factory=dict)  # role -> section -> key -> value
    wan: list = field(default_factory=list)
    derived: dict = field(default_factory=dict)  # a scaled profile's {base, k} (scaled_profiles.py)
    declares: dict = field(default_factory=dict)  # DECLARATIONS it makes: {what: why}, with its bases'

    @property
    def spec(self):
        """What `load` takes to give this profile again: its name, or for a scaled profile
        `<base>@k=<k>`."""
        return f"{self.derived['base']}@k={self.derived['k']:g}" if self.derived else self.name

    def section(self, role, section):
        return dict(self.roles.get(role, {}).get(section, {}))

    def for_host(self, host_roles, section):
        """Values for a host: `all` first, then each of its roles in order."""
        merged = self.section("all", section)
        for role in host_roles:
            merged.update(self.section(role, section))
        return merged

    def as_dict(self):
        out = {"name": self.name, "description": self.description, "reference": self.reference,
               "extends_chain": list(self.chain), "roles": copy.deepcopy(self.roles),
               "wan": copy.deepcopy(self.wan), "declares": dict(self.declares)}
        if self.derived:
            out["derived"] = dict(self.derived, spec=self.spec)
        return out


def profile_path(name_or_path):
    text = str(name_or_path)
    if "/" in text or text.endswith((".yaml", ".yml")):
        return Path(text)
    return PROFILE_DIR / f"{text}.yaml"


def _unsafe_text(text):
    """Why `text` cannot go into a rendered line (newlines start a new setting), or None."""
    if any(ch in text for ch in "\n\r"):
        return "contains a line break (a value or name must stay on its one line)"
    if any(ord(ch) < 32 and ch != "\t" or ord(ch) == 127 for ch in text):
        return "contains a control character"
    return None


def _check_name(reader, key):
    """Reject a key that would break its rendered line; errors name it escaped, on one line."""
    key = str(key)
    problem = _unsafe_text(key)
    if problem:
        raise reader.error(key.encode("unicode_escape").decode(), f"key {problem}")
    return key


def _check_condor_security(reader, key, value):
    upper, text = key.upper(), str(value).strip().upper()
    if upper in CONDOR_FORBIDDEN:
        raise reader.error(key, "is owned by the topology and security set-up; profiles may not set it")
    for pattern, problem in CONDOR_SECURITY_KNOBS:
        if pattern.fullmatch(upper):
            raise reader.error(key, f"{problem}; profiles may not set it")
    if upper.startswith("SEC_") and not SEC_ALLOWED.fullmatch(upper):
        raise reader.error(key, "security knobs other than crypto methods, encryption, integrity and "
                                "session lifetimes are owned by the security set-up; profiles may not set it")
    if SEC_PROTECTION.fullmatch(upper):
        allowed = ("REQUIRED", "PREFERRED") + (("OPTIONAL",) if upper in SEC_OPTIONAL_ALLOWED else ())
        if text not in allowed:
            raise reader.error(key, f"must be one of {', '.join(allowed)} (it weakens the pool's "
                                    f"security otherwise), got {value!r}")


def _check_value(reader, section, key, value):
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        raise reader.error(key, f"must be a number or a string, got {value!r}")
    if not finite(value):  # YAML's .nan and .inf: rendered, the words nan and inf
        raise reader.error(key, f"must be a finite number, got {value!r}")
    problem = _unsafe_text(str(value))
    if problem:
        raise reader.error(key, f"value {problem}: {value!r}")
    if section == "sysctl":
        if not SYSCTL_KEY.fullmatch(key):
            raise reader.error(key, "not a sysctl name (like net.core.rmem_max)")
        if isinstance(value, str) and not re.fullmatch(r"[0-9 \t-]+", value):
            raise reader.error(key, f"sysctl values here are numbers or number lists, got {value!r}")
    elif section == "condor":
        if not CONDOR_KEY.fullmatch(key):
            raise reader.error(key, "not an HTCondor configuration name")
        if str(value).rstrip().endswith("\\"):
            raise reader.error(key, f"value ends in a backslash (it would continue onto the next line): {value!r}")
        _check_condor_security(reader, key, value)
    elif section == "md":
        if key not in MD_KNOBS:
            raise reader.error(key, f"unknown md knob (known: {', '.join(MD_KNOBS)})")
        lo, hi = MD_KNOBS[key]
        if not isinstance(value, int) or not lo <= value <= hi:
            raise reader.error(key, f"must be an integer in {lo}..{hi}, got {value!r}")
    elif section == "xrootd_cache":
        if key not in XROOTD_CACHE_KNOBS:
            raise reader.error(key, f"unknown cache knob (known: {', '.join(XROOTD_CACHE_KNOBS)})")
        if key in ("ram", "blocksize") and not SIZE.fullmatch(str(value)):
            raise reader.error(key, f"must be a size like 512m or 1g, got {value!r}")
        if key == "prefetch" and (not isinstance(value, int) or not 0 <= value <= 128):
            raise reader.error(key, f"must be an integer in 0..128, got {value!r}")
        if key == "diskusage" and not re.fullmatch(r"0?\.\d+ 0?\.\d+", str(value)):
            raise reader.error(key, f"must be 'LOW HIGH' fractions like '0.90 0.95', got {value!r}")


def _parse_roles(reader):
    roles = {}
    for role in reader.data:
        _check_name(reader, role)
    reader.only(set(PROFILE_ROLES))
    for role, body in reader.data.items():
        r = reader.sub(role)
        for section in r.data:
            _check_name(r, section)
        r.only(set(SECTIONS))
        roles[role] = {}
        for section in r.data:
            s = r.sub(section)
            for key, value in s.data.items():
                _check_value(s, section, _check_name(s, key), value)
            roles[role][section] = {str(k): v for k, v in s.data.items()}
    return roles


def _merge(base, derived):
    merged = copy.deepcopy(base)
    for role, sections in derived.items():
        for section, values in sections.items():
            merged.setdefault(role, {}).setdefault(section, {}).update(values)
    return merged


def load(name_or_path, _seen=()):
    """A profile file's, by name or path (a scaled profile's spec: scaled_profiles.load)."""
    path = profile_path(name_or_path)
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in PROFILE_DIR.glob("*.yaml")))
        raise ConfigError(path, "", f"no such profile (known: {known})")
    r = Reader(load_yaml(path), path)
    r.only({"name", "description", "reference", "extends", "roles", "wan", "declares"})
    name = r.str("name", path.stem)
    if not PROFILE_NAME.fullmatch(name):
        raise r.error("name", f"must be letters, digits, '.', '_' or '-' (it is written into "
                              f"rendered files), got {name!r}")
    if name in _seen:
        raise r.error("extends", f"inheritance loop: {' -> '.join(_seen + (name,))}")
    roles = _parse_roles(r.sub("roles"))
    wan = r.list("wan", [])
    if wan:
        from testbed.model.links import parse_links
        parse_links(wan, path, "wan")
    declares = _parse_declarations(r)
    chain = [name]
    if "extends" in r.data:
        parent = load(r.str("extends"), _seen + (name,))
        roles = _merge(parent.roles, roles)
        wan = wan or parent.wan
        chain += parent.chain
        declares = {**parent.declares, **declares}
    _check_declared(r, roles, declares)
    return Profile(name=name, source=path, description=r.data.get("description", ""),
                   reference=r.data.get("reference", ""), chain=chain, roles=roles, wan=wan,
                   declares=declares)


def _parse_declarations(reader):
    """{what: why} of the profile's `declares:`: each a DECLARATIONS key with a one-line reason."""
    if "declares" not in reader.data:
        return {}
    d = reader.sub("declares")
    d.only(set(DECLARATIONS))
    out = {}
    for what, why in d.data.items():
        if not isinstance(why, str) or not why.strip() or _unsafe_text(why):
            raise d.error(what, "needs a one-line reason (why the profile needs it)")
        out[str(what)] = why.strip()
    return out


def needed_declarations(roles):
    """{what: first (role, key) that needs it} for the profile's merged HTCondor knobs."""
    needs = {}
    for role in sorted(roles, key=PROFILE_ROLES.index):
        for key, value in sorted(roles[role].get("condor", {}).items()):
            upper = key.upper()
            if RUNS_COMMANDS.fullmatch(upper):
                needs.setdefault("runs_commands", (role, key))
            if SEC_PROTECTION.fullmatch(upper) and str(value).strip().upper() == "OPTIONAL":
                needs.setdefault("weakens_encryption", (role, key))
    return needs


def _check_declared(reader, roles, declares):
    for what, (role, key) in needed_declarations(roles).items():
        if what not in declares:
            raise reader.error(f"roles.{role}.condor.{key}",
                               f"{DECLARATIONS[what]}; the profile must say so and why "
                               f"(declares: {{{what}: <reason>}})")


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
