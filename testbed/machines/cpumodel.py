"""Switch a running guest between CPU models (for side-by-side measurements): rewrite the
domain's <cpu> element, redefine it, and power-cycle the guest so the new model is in force."""
import re
import time
import xml.etree.ElementTree as ET

from testbed.machines import domains
from testbed.model.errors import TestbedError


def with_cpu(xml_text, model, features):
    """The domain XML with its <cpu> replaced by a custom `model` requiring `features`."""
    root = ET.fromstring(xml_text)
    old = root.find("cpu")
    index = list(root).index(old) if old is not None else len(root)
    if old is not None:
        root.remove(old)
    cpu = ET.Element("cpu", {"mode": "custom", "match": "exact", "check": "none"})
    ET.SubElement(cpu, "model", {"fallback": "allow"}).text = model
    for name in features:
        ET.SubElement(cpu, "feature", {"policy": "require", "name": name})
    root.insert(index, cpu)
    return ET.tostring(root, encoding="unicode")


def cpu_flags(cpuinfo):
    """The flags of the first processor in /proc/cpuinfo, as a set."""
    m = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.MULTILINE)
    return set(m.group(1).split()) if m else set()


def switch(topo, host, model, features, tmpdir, timeout=600):
    """Give `host`'s domain the CPU model and restart it; returns seconds until it is
    running again (the caller waits for SSH and health)."""
    name = domains.domain_name(topo, host)
    dumped = domains._virsh("dumpxml", "--inactive", name)
    if dumped.returncode != 0:
        raise TestbedError(f"{host}: virsh dumpxml {name}: {dumped.stderr.strip()}")
    path = tmpdir / f"{name}.xml"
    path.write_text(with_cpu(dumped.stdout, model, features))
    started = time.monotonic()
    domains._virsh("destroy", name, timeout=120)
    for args in (("define", str(path)), ("start", name)):
        res = domains._virsh(*args, timeout=timeout)
        if res.returncode != 0:
            raise TestbedError(f"{host}: virsh {' '.join(args)}: {res.stderr.strip()}")
    return time.monotonic() - started


def openssl_rate(text):
    """MB/s of the last `openssl speed -evp aes-128-gcm -bytes 4096` result line (in 1000s of bytes/s)."""
    m = re.search(r"^aes-128-gcm\s+([0-9.]+)k\s*$", text, re.MULTILINE | re.IGNORECASE)
    return float(m.group(1)) / 1000 if m else None
