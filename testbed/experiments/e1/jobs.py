"""E1's jobs by equation 1 of seed 000 (W = n x s / l): the rate a batch writes, the output
size that makes a rate, the bytes an output holds, and the names of the paper's rates. The
scale model (e1_scale.py) and the suite (transfer.py) size jobs through here."""

PAPER = "results/paper/e1.yaml"


def expected_rate(n_jobs, size_mb, length_s):
    """Equation 1 of seed 000: W(n, l, s) = n x s / l, in MB/s."""
    if length_s <= 0:
        raise ValueError("job length must be positive")
    return n_jobs * size_mb / length_s


def size_for_rate(rate_mbs, n_jobs, length_s, cap_mb=None):
    """Output size (MB in steps of 0.1, at least 0.1) that makes n jobs of length l write
    at `rate`. Tenths keep W and 2W apart when the site is slow (whole MB made both 1 MB)."""
    size = max(0.1, round(rate_mbs * length_s / n_jobs, 1))
    size = int(size) if size >= 10 else size
    return min(size, cap_mb) if cap_mb else size


def output_bytes(size_mb):
    """Bytes of a job's output of `size_mb` MB, as JOB_SCRIPT's awk printf "%d" makes it."""
    return int(size_mb * 1048576)


def rate_label(factor):
    """1 -> 'W', 2 -> '2W' (the names of the paper's rates)."""
    factor = float(factor)
    return "W" if factor == 1 else f"{factor:g}W"
