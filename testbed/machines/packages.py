"""What each guest OS needs installed, and the commands that install it.

debian13 (the default, offline): the box carries every package; guests install
nothing at run time. el9 (for users with internet access; not exercised
offline): a stock AlmaLinux 9 Vagrant box, the official HTCondor RPM
repository and EPEL's XRootD, installed by a first shell provisioner.

An existing host (topology `existing:`) runs Debian 13 like the box; provisioning
installs, from the host's own apt sources, what its roles need that is not there
yet (DEBIAN_ROLE_PACKAGES), and `down` purges exactly what it installed.
"""
HTCONDOR_SERIES = "23.x"
HTCONDOR_VERSION = "23.9"
EL9_RELEASE_RPM = (f"https://research.cs.wisc.edu/htcondor/repo/{HTCONDOR_SERIES}/"
                   "htcondor-release-current.el9.noarch.rpm")
EL9_BOX = "almalinux/9"

EL9_PACKAGES = [
    f"condor-{HTCONDOR_VERSION}.*",              # HTCondor RPM repository
    "xrootd-server", "xrootd-server-libs",      # EPEL: xrootd, cmsd, libXrdPss/libXrdPfc
    "xrootd-client",                             # EPEL: xrdcp, xrdfs, xrdadler32
    "mdadm", "xfsprogs", "iproute", "iproute-tc", "fio", "iperf3", "sysstat",
    "python3", "python3-pyyaml",
]


def install_commands(box):
    """Shell commands (run as root on the guest) that install what a role script needs."""
    if box == "debian13":
        return []
    if box == "el9":
        return [
            "dnf -y -q install epel-release",
            f"rpm -q htcondor-release >/dev/null 2>&1 || dnf -y -q install {EL9_RELEASE_RPM}",
            "dnf -y -q install " + " ".join(f"'{p}'" if "*" in p else p for p in EL9_PACKAGES),
            # provisioning starts the daemons itself, once keys and config are in place
            "systemctl disable --now condor.service chronyd.service 2>/dev/null || true",
            "getent passwd xrootd >/dev/null",
        ]
    raise ValueError(f"unknown box {box!r}")


def vagrant_box(box, local_name):
    """The Vagrant box name: our locally built one, or the EL9 box from Vagrant Cloud."""
    return EL9_BOX if box == "el9" else local_name


# An existing Debian 13 host: what each role's scripts and the suites run there need
# (a subset of provision/box/debian-packages.txt; the boot, init and network stack and the
# E3/E4 extras stay the host's own business). `all`: every host.
DEBIAN_ROLE_PACKAGES = {
    "all": ["iproute2", "procps", "iputils-ping", "python3", "python3-yaml", "sysstat", "iperf3", "fio"],
    "submit": ["condor", "xrootd-client"],
    "cm": ["condor"],
    "ccb": ["condor"],
    "worker": ["condor", "xrootd-client"],
    "origin": ["xrootd-server", "xrootd-client"],
}


def existing_host_packages(roles):
    """The Debian packages an existing host with these roles needs, in a stable order."""
    out = []
    for role in ["all", *roles]:
        for name in DEBIAN_ROLE_PACKAGES.get(role, []):
            if name not in out:
                out.append(name)
    return out
