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


# `testbed wan set` names a link's properties as the topology does (`rtt_ms`, `jitter_ms`,
# `loss_pct`, `rate_mbit`) or short (`rtt`, `jitter`, `loss`, `rate`), each with its units
SPEC_KEYS = {"rtt": "rtt_ms", "jitter": "jitter_ms", "loss": "loss_pct", "rate": "rate_mbit"}
SPEC_UNITS = {"rtt_ms": {"": 1, "ms": 1, "s": 1000}, "jitter_ms": {"": 1, "ms": 1, "s": 1000},
              "loss_pct": {"": 1, "%": 1}, "rate_mbit": {"": 1, "kbit": 0.001, "mbit": 1, "gbit": 1000}}
SPEC_FORM = ("A:B[:RTT][:rtt=40ms][:jitter=1ms][:loss=0.1%][:rate=100mbit|1gbit] "
             "(or the topology's rtt_ms=, jitter_ms=, loss_pct=, rate_mbit=)")
NUMBER = re.compile(r"(\d+(?:\.\d+)?)([a-z%]*)")


def _spec_value(source, text, field, raw):
    m = NUMBER.fullmatch(raw.strip().lower())
    units = SPEC_UNITS[field]
    if not m or m.group(2) not in units:
        shown = ", ".join(f"N{u}" for u in units if u) or "N"
        raise ConfigError(source, text, f"{field.split('_')[0]} {raw!r} is not a number ({shown})")
    return float(m.group(1)) * units[m.group(2)]


def parse_spec(text, source="wan set"):
    """'submit:worker:40ms:jitter=1ms:loss=0.1%:rate=1gbit' (or `rtt=40ms`, or the topology's
    own `rtt_ms=40`, ...) -> Link, checked as a topology's link is."""
    parts = text.split(":")
    if len(parts) < 3 or not all(parts):
        raise ConfigError(source, text, f"expected {SPEC_FORM}")
    item = {"between": [parts[0], parts[1]]}
    for i, part in enumerate(parts[2:]):
        key, sep, raw = part.partition("=")
        if not sep and i == 0:                  # the RTT, unnamed, right after the two groups
            key, raw = "rtt", part
        elif not sep:
            raise ConfigError(source, text, f"{part!r}: name it, e.g. loss={part} (form: {SPEC_FORM})")
        field = SPEC_KEYS.get(key, key)
        if field not in SPEC_UNITS:
            raise ConfigError(source, text, f"unknown property {key!r} (known: rtt, jitter, loss, rate)")
        if field in item:
            raise ConfigError(source, text, f"{key} is given twice")
        item[field] = _spec_value(source, text, field, raw)
    if len(item) == 1:
        raise ConfigError(source, text, f"no property given (form: {SPEC_FORM})")
    try:
        return parse_links([item], source)[0]
    except ConfigError as exc:  # named by the spec the user typed, not by a topology's field
        raise ConfigError(source, text, f"{exc.field.rsplit('.', 1)[-1]} {exc.problem}") from None


def describe(link):
    """'40 ms RTT, jitter 1 ms, loss 0.1%, rate 1000 Mbit/s' (only what the link sets)."""
    words = [f"{link.rtt_ms:g} ms RTT"]
    if link.jitter_ms:
        words.append(f"jitter {link.jitter_ms:g} ms")
    if link.loss_pct:
        words.append(f"loss {link.loss_pct:g}%")
    if link.rate_mbit:
        words.append(f"rate {link.rate_mbit:g} Mbit/s")
    return ", ".join(words)
