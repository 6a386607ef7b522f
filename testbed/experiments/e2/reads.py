"""E2's readers: the xrdcp clients on the workers that read origin files through the DTN
(which files, the shell each runs, the line each read prints) and what their reads add up
to (throughput, the round trips a read waited for)."""
import random

from testbed.services.storage import timed_read, timed_reads


def assign_reads(files, clients, reads_per_client, seed):
    """Each client reads `reads_per_client` files picked at random (reproducible per seed)."""
    rng = random.Random(seed)
    return [[rng.choice(files) for _ in range(reads_per_client)] for _ in range(clients)]


def client_script(endpoint, client_id, files, pgread=False):
    """One client: read its files one after another to /dev/null; print one line per read:
    `read CLIENT FILE START END RC` (services/storage.py's timed read). `pgread` False: xrdcp asks with kXR_read, as
    XRootD 4's did in the paper (XRD_CPUSEPGWRTRD=0); True: with kXR_pgread, XRootD 5's
    default, which a pass-through proxy answers in pieces out of order, and an XrdCl before
    5.9.2 then re-reads pages of each piece, one origin round trip each (docs/upstream/)."""
    env = "" if pgread else "XRD_CPUSEPGWRTRD=0 "
    return "; ".join(timed_read(f"root://{endpoint}//data/{name}", client_id, name, env=env) for name in files)


def parallel_clients_script(endpoint, assignments, pgread=False):
    """All clients of one host at once: background each, wait for all."""
    parts = [f"( {client_script(endpoint, cid, files, pgread)} ) &" for cid, files in assignments]
    return " ".join(parts) + " wait"


def parse_client_lines(text, file_bytes):
    """[(client, file, bytes, start, end, rc)] with sizes from the origin's listing."""
    return [(client, name, file_bytes.get(name, 0), start, end, rc)
            for client, name, start, end, rc in timed_reads(text)]


def round_trips_per_mb(near_s, far_s, rtt_ms, size_bytes):
    """The round trips a read waited for per MB: its extra seconds at `rtt_ms` over its
    seconds at 0 ms, divided by the RTT and by the MB read."""
    if rtt_ms <= 0 or size_bytes <= 0:
        raise ValueError(f"round trips per MB need an RTT and a size above 0, got {rtt_ms!r} ms, {size_bytes!r} B")
    return (far_s - near_s) / (rtt_ms / 1000.0) / (size_bytes / 1e6)


def summarise_reads(reads):
    """Aggregate rate over the wall time of all reads, and the mean per-client rate, MB/s."""
    ok = [r for r in reads if r[5] == 0]
    if not ok:
        return {"aggregate": 0.0, "per_client": 0.0, "bytes": 0, "failed": len(reads)}
    wall = max(r[4] for r in ok) - min(r[3] for r in ok)
    per_client = {}
    for client, _n, size, start, end, _rc in ok:
        b, t = per_client.get(client, (0, 0.0))
        per_client[client] = (b + size, t + (end - start))
    total = sum(r[2] for r in ok)
    rates = [b / t / 1e6 for b, t in per_client.values() if t > 0]
    return {"aggregate": total / wall / 1e6 if wall > 0 else 0.0,
            "per_client": sum(rates) / len(rates) if rates else 0.0,
            "bytes": total, "failed": len(reads) - len(ok)}
