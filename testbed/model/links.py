"""A WAN link between two host groups as topologies, profiles and the CLI declare it:
RTT, jitter, loss and rate, validated; an RTT as the metrics label it."""
import re
from dataclasses import dataclass

from testbed.model.errors import ConfigError
from testbed.model.schema import Reader


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    rtt_ms: float
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    rate_mbit: float = 0.0


def rtt_label(rtt):
    """An RTT as the metrics label it: 20, not 20.0 (the paper files' keys are whole)."""
    rtt = float(rtt)
    return int(rtt) if rtt.is_integer() else rtt


def parse_links(items, source, field="wan"):
    links = []
    if not isinstance(items, list):
        raise ConfigError(source, field, "must be a list of links")
    for i, item in enumerate(items):
        r = Reader(item, source, f"{field}[{i}]")
        r.only({"between", "rtt_ms", "jitter_ms", "loss_pct", "rate_mbit"})
        pair = r.list("between")
        if len(pair) != 2 or not all(isinstance(p, str) for p in pair) or pair[0] == pair[1]:
            raise r.error("between", "must name two different host groups, e.g. [submit, worker]")
        links.append(Link(a=pair[0], b=pair[1], rtt_ms=r.number("rtt_ms", 0, 0, 2000),
                          jitter_ms=r.number("jitter_ms", 0, 0, 1000),
                          loss_pct=r.number("loss_pct", 0, 0, 100),
                          rate_mbit=r.number("rate_mbit", 0, 0, 100000)))
    return links


def parse_spec(text, source="--link"):
    """'submit:worker:40ms[:jitter=1ms][:loss=0.1%][:rate=1000mbit]' -> Link."""
    parts = text.split(":")
    if len(parts) < 3:
        raise ConfigError(source, text, "expected A:B:RTT like submit:worker:40ms")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms)?", parts[2])
    if not m:
        raise ConfigError(source, text, f"RTT {parts[2]!r} is not a number of ms")
    item = {"between": [parts[0], parts[1]], "rtt_ms": float(m.group(1))}
    for extra in parts[3:]:
        key, _, value = extra.partition("=")
        unit = {"jitter": "ms", "loss": "%", "rate": "mbit"}.get(key)
        if unit is None or not re.fullmatch(rf"\d+(?:\.\d+)?({re.escape(unit)})?", value):
            raise ConfigError(source, text, f"bad option {extra!r} (jitter=Nms, loss=N%, rate=Nmbit)")
        item[{"jitter": "jitter_ms", "loss": "loss_pct", "rate": "rate_mbit"}[key]] = \
            float(value.rstrip("ms%bit").rstrip("m") or 0)
    return parse_links([item], source)[0]
