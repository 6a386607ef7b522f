"""The CPU-model switch rewrites only the domain's <cpu>, and the benchmark's parsers."""
import xml.etree.ElementTree as ET

from testbed.machines import cpumodel

DOMAIN = """<domain type='qemu'><name>tb-small-worker1</name><memory unit='KiB'>524288</memory>
<cpu mode='custom' match='exact' check='none'><model fallback='allow'>qemu64</model>
<feature policy='require' name='aes'/><feature policy='require' name='ssse3'/></cpu>
<devices><disk type='file'/></devices></domain>"""


def test_with_cpu_replaces_the_features_and_keeps_everything_else():
    out = ET.fromstring(cpumodel.with_cpu(DOMAIN, "qemu64", []))
    cpus = out.findall("cpu")
    assert len(cpus) == 1 and cpus[0].find("model").text == "qemu64"
    assert cpus[0].findall("feature") == []
    assert out.find("name").text == "tb-small-worker1" and out.find("devices/disk") is not None
    assert [c.tag for c in out].index("cpu") == 2  # same place as before


def test_with_cpu_adds_required_features_where_there_was_no_cpu():
    xml = "<domain><name>x</name></domain>"
    cpu = ET.fromstring(cpumodel.with_cpu(xml, "qemu64", ["aes", "sse4.2"])).find("cpu")
    assert [(f.get("name"), f.get("policy")) for f in cpu.findall("feature")] == [("aes", "require"),
                                                                                   ("sse4.2", "require")]


def test_cpu_flags_reads_the_first_processor():
    text = "processor\t: 0\nflags\t\t: fpu sse2 ssse3 aes\n\nprocessor\t: 1\nflags\t\t: fpu\n"
    assert cpumodel.cpu_flags(text) == {"fpu", "sse2", "ssse3", "aes"}
    assert cpumodel.cpu_flags("") == set()


def test_openssl_rate_parses_the_result_line():
    text = ("The 'numbers' are in 1000s of bytes per second processed.\n"
            "type           4096 bytes\naes-128-gcm      21234.56k\n")
    assert abs(cpumodel.openssl_rate(text) - 21.23456) < 1e-9
    assert cpumodel.openssl_rate("error") is None
