"""Apply a tuning profile to a running site, read every value back, record it.

No reprovisioning: the files a profile owns are pushed over SSH, then
`sysctl -p`, `condor_reconfig` (a daemon restart only for knobs read at socket
creation), md sysfs writes, and a restart of the caching proxy when its
configuration changed. Every value is then read back from the kernel, the
running condor_master, sysfs and the proxy's configuration; anything that did
not take is an error naming the host and the knob.
"""
import shlex
import time

from testbed.model import profiles
from testbed.machines import render
from testbed.model.errors import TestbedError

from testbed.model.constants import MD_SYSFS as MD_SYS  # noqa: E402
from testbed.remote.poll import wait_for
from testbed.services.condor import Pool, wait_single_had_leader
from testbed.services.gateway import Daemons, reconfig_command
PROFILE_CONDOR_FILE = "etc/condor/config.d/60-testbed-profile.conf"
PROFILE_XROOTD_FILE = "etc/xrootd/dtn.cfg"
# Knobs a daemon reads only when it creates its sockets: reconfig is not enough.
COLLECTOR_RESTART_KNOBS = {"COLLECTOR_SOCKET_BUFSIZE"}
COLLECTOR_RESTART_SYSCTLS = {"net.core.rmem_max"}  # bounds the collector's UDP buffer
PFC_DIRECTIVES = {"ram": "pfc.ram", "blocksize": "pfc.blocksize", "prefetch": "pfc.prefetch",
                  "diskusage": "pfc.diskusage"}


def expected_values(topo, profile, host):
    """{(section, key): value} the host must show once the profile is in force."""
    want = {}
    for key, value in profile.for_host(host.roles, "sysctl").items():
        want[("sysctl", key)] = profiles.normalise_sysctl(value)
    if render.is_condor_host(host):
        for key, value in profile.for_host(host.roles, "condor").items():
            want[("condor", key)] = str(value).strip()
    if host.has("dtn"):
        for key, value in profile.for_host(host.roles, "md").items():
            want[("md", key)] = str(value)
        for key, value in profile.for_host(host.roles, "xrootd_cache").items():
            want[("xrootd_cache", key)] = " ".join(str(value).split())
    return want


# Bash functions of every apply script. A profile file is written by builtins only (no process
# per file: under TCG a process costs about a second while every guest applies at once); a new
# header comment alone (another profile's name) is not a change that makes a daemon reconfigure.
PUT_FILE_FUNCTIONS = r"""
uncommented() { local line; REPLY=; while IFS= read -r line; do [[ $line == '#'* ]] || REPLY+=$line$'\n'; done <<< "$1"; }
put_profile_file() {  # PATH CONTENT NAME: write CONTENT to PATH; NAME joins $changed when more than comments differ
  local path=$1 new=$2 old= was
  if [ -r "$path" ]; then IFS= read -r -d '' old < "$path" || true; fi
  [ "$old" = "$new" ] && return 0
  uncommented "$old"; was=$REPLY; uncommented "$new"
  [ "$was" = "$REPLY" ] || changed="$changed $3"
  [ -d "${path%/*}" ] || mkdir -p "${path%/*}"
  printf '%s' "$new" > "$path"
}
"""


def apply_script(topo, profile, host, previous=None):
    """The bash script that installs a host's profile files and makes them take effect."""
    env = render.environment()
    ctx = render.context(topo, profile, host)
    files = render.render_profile_files(env, ctx)
    lines = ["set -e", "changed=", PUT_FILE_FUNCTIONS.strip()]
    lines += [f"put_profile_file {shlex.quote('/' + rel)} {shlex.quote(text)} {shlex.quote(rel)}"
              for rel, text in sorted(files.items())]
    lines += ["echo \"changed:$changed\"", "sysctl -q -p /etc/sysctl.d/90-testbed-profile.conf"]
    if render.is_condor_host(host):
        restart = host.has("cm") or host.has("ccb")
        old = previous.for_host(host.roles, "condor") if previous else {}
        new = profile.for_host(host.roles, "condor")
        # Collector tuning set for the cm/ccb roles themselves (not a site-wide `all`
        # change such as Table 4's buffers) needs the collector's sockets remade.
        need_collector = restart and previous is not None and (
            any(old.get(k) != new.get(k) for k in COLLECTOR_RESTART_KNOBS)
            or any(previous.section(role, "sysctl").get(k) != profile.section(role, "sysctl").get(k)
                   for role in ("cm", "ccb") if host.has(role) for k in COLLECTOR_RESTART_SYSCTLS))
        # 23.9's HAD drops its leader state on a reconfig (HadIsActive stays false while
        # the negotiator keeps running; observed on this testbed), so a CM whose knobs
        # changed also restarts HAD, and `apply` waits for a new leader.
        lines.append(f"case \"$changed\" in *{PROFILE_CONDOR_FILE}*) {reconfig_command(host.has('cm'))};; esac")
        if need_collector:
            lines.append(collector_restart_script())
    if host.has("dtn"):
        for key, value in profile.for_host(host.roles, "md").items():
            lines.append(f"echo {int(value)} > {MD_SYS}/{key}")
        lines.append(f"case \"$changed\" in *{PROFILE_XROOTD_FILE}*) systemctl restart xrootd@xcache;; esac")
    return "\n".join(lines) + "\n"


collector_restart_script = Daemons.collector_restart_script


def readback_script(want):
    """Prints `section<TAB>key<TAB>value` for every expected value. Under TCG every process is
    a noticeable cost, so kernel and sysfs values are read by bash builtins from their files
    (no process per value) and the proxy's file is read once; the running master's knobs come
    from one condor_config_val. Should it print other than one line per knob, each is asked
    on its own. A value that cannot be read prints empty (a mismatch, not a failed script)."""
    lines = []
    condor = [key for section, key in sorted(want) if section == "condor"]
    if condor:
        printed = "; ".join(f"printf 'condor\\t%s\\t%s\\n' {shlex.quote(k)} \"${{vals[{i}]}}\""
                            for i, k in enumerate(condor))
        one_by_one = "; ".join(_readback_line("condor", k) for k in condor)
        lines.append(f"if v=$({Daemons.config_vals_command(condor)}) && mapfile -t vals <<< \"$v\" "
                     f"&& [ ${{#vals[@]}} -eq {len(condor)} ] && [[ $'\\n'\"$v\" != *$'\\n'\"Not defined\"* ]]; "
                     f"then {printed}; else {one_by_one}; fi")
    cache = sorted(key for section, key in want if section == "xrootd_cache")
    if cache:  # the proxy's values count only while it runs; its file is read once for all
        lines.append("xcache_up=; systemctl is-active -q xrootd@xcache && xcache_up=1")
        lines.append("".join(f"pfc_{k}=; " for k in cache)
                     + f"[ -n \"$xcache_up\" ] && while read -r directive rest; do case $directive in "
                     + " ".join(f"{PFC_DIRECTIVES[k]}) pfc_{k}=$rest;;" for k in cache)
                     + f" esac; done 2>/dev/null < /{PROFILE_XROOTD_FILE}")
    lines += [_readback_line(section, key) for section, key in sorted(want) if section != "condor"]
    return "\n".join(lines) + "\n"


def _readback_line(section, key):
    """The line of readback_script that prints one value."""
    q = shlex.quote(key)
    if section == "condor":
        # Ask the running master (it has reconfigured), not just the files.
        value = f"$({Daemons.config_val_command(key)} 2>/dev/null | tr '\\t\\n' '  ')"
    elif section == "xrootd_cache":
        value = f"$pfc_{key}"
    else:
        path = shlex.quote(f"{MD_SYS}/{key}" if section == "md" else sysctl_path(key))
        return (f"v=; {{ IFS= read -r v < {path}; }} 2>/dev/null; "
                f"printf '%s\\t%s\\t%s\\n' {section} {q} \"$v\"")
    return f"printf '%s\\t%s\\t%s\\n' {section} {q} \"{value}\""


def sysctl_path(key):
    """The /proc/sys file of a sysctl key, as sysctl(8) maps it: dots are the path's
    separators, and a slash in the key stands for a dot in a name (eth0/1 is eth0.1)."""
    return "/proc/sys/" + key.translate(str.maketrans("./", "/."))


def parse_readback(text):
    got = {}
    for line in text.splitlines():
        parts = line.split("\t", 2)
        if len(parts) == 3:
            got[(parts[0], parts[1])] = " ".join(parts[2].split())
    return got


def same(section, want, got):
    if section == "condor":
        return want.lower() == got.lower()
    return " ".join(want.split()) == " ".join(got.split())


def mismatches(profile_name, host, want, got):
    out = []
    for (section, key), value in sorted(want.items()):
        have = got.get((section, key))
        if have is None:
            out.append(f"{host}: {section} {key} was not read back")
        elif not same(section, value, have):
            out.append(f"{host}: {section} {key} is {have!r}, profile {profile_name} wants {value!r}")
    return out


def read_back(topo, ssh, profile, skip=()):
    """{host: {(section, key): value}} and a list of mismatches (the hosts in `skip` not read)."""
    wants = {name: expected_values(topo, profile, h) for name, h in topo.hosts.items() if name not in skip}
    results = ssh.run_many({name: readback_script(w) for name, w in wants.items()}, timeout=120)
    return judged(profile, wants, {name: res.stdout for name, res in results.items() if res.ok},
                  {name: (res.stderr.strip() or "no output").splitlines()[-1]
                   for name, res in results.items() if not res.ok})


def judged(profile, wants, texts, failed=None):
    """({host: {(section, key): value}}, [mismatch]) of read-back `texts` ({host: output})
    against `wants` ({host: expected_values}); `failed`: {host: why its read-back failed}."""
    got, bad = {}, []
    for name, want in wants.items():
        if name in (failed or {}):
            got[name] = {}
            bad.append(f"{name}: read-back failed: {failed[name]}")
        else:
            got[name] = parse_readback(texts.get(name, ""))
            bad += mismatches(profile.name, name, want, got[name])
    return got, bad


def _wait_had_leader(topo, ssh, echo, timeout=300):
    echo("central managers reconfigured: waiting for HAD to elect a leader")
    wait_single_had_leader(Pool(topo, ssh), timeout, error=TestbedError,
                           message=f"no single HAD leader {timeout} s after reconfiguring the central managers")


class _NotYet(Exception):
    """The profile did not read back within the settle time (the mismatches are raised)."""


READBACK_MARK = "--- read back ---"  # between an apply script's own output and its read-back


def apply(topo, ssh, profile, previous=None, echo=print, settle=30, skip=(), separate_readback=False):
    """Push, take effect, read back: each host's values are read back by its apply script
    itself (one round trip per host); only while a daemon is still reconfiguring is the
    read-back asked again, briefly. The hosts in `skip` (paused for a run) are left as they
    are: the run gives them the profile in force when it resumes them
    (testbed/harness/quiet.py). `separate_readback`: read back in a round trip of its own
    after the apply (benchmarks/profile_swap.py's other arm)."""
    started = time.monotonic()
    wants = {name: expected_values(topo, profile, h) for name, h in topo.hosts.items() if name not in skip}
    asked = {name: "" if separate_readback else f"set +e\necho {shlex.quote(READBACK_MARK)}\n" + readback_script(want)
                for name, want in wants.items()}
    results = ssh.run_many({name: apply_script(topo, profile, topo.hosts[name], previous) + asked[name]
                            for name in wants}, timeout=180)
    failed = [f"{n}: {(r.stderr.strip() or r.stdout.strip() or 'no output').splitlines()[-1]}"
              for n, r in results.items() if not r.ok]
    if failed:
        raise TestbedError(f"profile {profile.name}: applying failed on " + "; ".join(failed))
    outputs = {n: r.stdout.partition(READBACK_MARK) for n, r in results.items()}
    changed = {n: own.split("changed:", 1)[-1].split() for n, (own, _mark, _back) in outputs.items()}
    got, bad = judged(profile, wants, {n: back for n, (_own, _mark, back) in outputs.items()})
    read_again = bool(bad) and not separate_readback
    if any(PROFILE_CONDOR_FILE in changed.get(h.name, ()) for h in topo.with_role("cm")):
        _wait_had_leader(topo, ssh, echo)
    if bad:
        last = {}

        def in_force():
            last["got"], last["bad"] = read_back(topo, ssh, profile, skip)
            return not last["bad"]

        try:   # retried while daemons reconfigure; what is still wrong then is the error below
            wait_for(f"profile {profile.name} read back", in_force, settle, 2, error=_NotYet)
        except _NotYet:
            pass
        got, bad = last["got"], last["bad"]
    if bad:
        raise TestbedError(f"profile {profile.name} did not take effect: {bad[0]}"
                           + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
    seconds = time.monotonic() - started
    echo(f"profile {profile.name} in force on {len(results)} hosts after {seconds:.1f} s; "
         f"{sum(len(w) for w in got.values())} values read back"
         + (" (read again while daemons reconfigured)" if read_again else ""))
    readback = {h: {f"{s}:{k}": v for (s, k), v in sorted(vals.items())} for h, vals in got.items()}
    return {"seconds": seconds, "changed": changed, "readback": readback, "read_again": read_again}
