"""A guest's serial console log on this machine: where it is, its last lines, and whether
the guest's kernel died since it last booted.

libvirt writes each VM's serial console to a file (the Vagrantfile's `serial type: file`),
truncated when the domain starts. A guest that reboots inside the same domain keeps
appending, so "since it last booted" means after the last login prompt the serial getty
printed. A dead kernel (a panic, an oops, a double fault) never answers SSH again; the
SSH layer asks `kernel_death` when a command could not reach a guest, so that a wait fails
at once with the console's words instead of running out its time-out."""
import os
import re
from pathlib import Path

# what a kernel prints when it cannot go on (RCU stalls and soft lockups, common under TCG
# on a busy host, are warnings the guest survives: not listed)
DEATH = re.compile(r"Kernel panic - not syncing|Oops: |double fault|BUG: unable to handle|"
                   r"end Kernel panic")
# the serial getty's prompt, printed after every boot ("tb-default-submit login: ")
BOOTED = re.compile(r"^\S+ login: ?", re.MULTILINE)


def console_dir():
    """Outside the checkout (whose state folder is private to root): libvirt's qemu
    user writes each guest's serial console here."""
    return Path(os.environ.get("TESTBED_CONSOLE_DIR", "/var/log/grid-testbed/console"))


def console_log(topology_name, host):
    return console_dir() / f"tb-{topology_name}-{host}.log"


def _read(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def tail(path, lines=2):
    """The last `lines` non-empty lines of a console log joined by ' | ' ('' when none)."""
    kept = [line.strip() for line in _read(path).splitlines() if line.strip()]
    return " | ".join(kept[-lines:])


def kernel_death(path):
    """The first line telling that the guest's kernel died after its last login prompt,
    else None (no log here, as for a guest on another hypervisor, is None too)."""
    text = _read(path)
    booted = [m.end() for m in BOOTED.finditer(text)]
    since = text[booted[-1]:] if booted else text
    m = DEATH.search(since)
    if not m:
        return None
    start = since.rfind("\n", 0, m.start()) + 1
    end = since.find("\n", m.end())
    line = since[start:end if end >= 0 else len(since)].strip()
    line = re.sub(r"^\S+ login: ", "", line)   # the prompt, when the kernel wrote after it
    return re.sub(r"^\[\s*[0-9.]+\]\s*", "", line)[:160]


def dead_guests(topo):
    """{host: the console's line} of the site's VMs whose kernel died since they last booted
    (TCG guests now and then panic under load): no trial can run on them."""
    died = {h.name: kernel_death(console_log(topo.name, h.name)) for h in topo.vm_hosts}
    return {h: line for h, line in died.items() if line}


def dead_text(topo, died):
    where = ", ".join(f"{h} ({line!r}, console {console_log(topo.name, h)})" for h, line in died.items())
    return (f"the kernel of {where} died; bring the site back with "
            f"./tb -t {topo.name} down && ./tb -t {topo.name} up")
