"""How many startd daemons fit a worker VM's memory: the arithmetic that refuses an N per
worker before anything starts (the topology's `startds`, E5's `--set startds_per_worker`
and the largest step of its collector ramp).

A worker needs `base_mb` without its startds, `per_startd_mb` per startd daemon and, when a
suite watches guest memory, `keep_free_mb` on top; `source` says where `per_startd_mb`
comes from (the constant, or the run that measured it), and every refusal quotes it."""
import math
from dataclasses import dataclass

from testbed.model.constants import E5_STARTD_MB, WORKER_BASE_MB

CONSTANT_SOURCE = "E5_STARTD_MB, a constant: no run has measured a startd yet"


@dataclass(frozen=True)
class StartdMemory:
    per_startd_mb: float = E5_STARTD_MB
    source: str = CONSTANT_SOURCE
    base_mb: int = WORKER_BASE_MB
    keep_free_mb: int = 0

    def __post_init__(self):
        if self.per_startd_mb <= 0:
            raise ValueError(f"memory per startd must be > 0 MB, got {self.per_startd_mb}")

    def need_mb(self, startds):
        """MB a worker needs to run `startds` startd daemons."""
        return startds * self.per_startd_mb + self.base_mb + self.keep_free_mb

    def largest(self, memory_mb):
        """The most startds a worker of `memory_mb` holds (0 when not even one fits)."""
        room = memory_mb - self.base_mb - self.keep_free_mb
        return max(0, math.floor(room / self.per_startd_mb + 1e-9))

    def refusal(self, host, memory_mb, startds):
        """None when `startds` fit on `host` (a worker of `memory_mb`), else one line with
        the arithmetic: what they need, what the guest has, and the most that fit."""
        if startds <= self.largest(memory_mb):
            return None
        free = f" + {self.keep_free_mb} MB kept free" if self.keep_free_mb else ""
        return (f"{host}: {startds} startds x {self.per_startd_mb:g} MB ({self.source}) + {self.base_mb} MB "
                f"for the guest without them (WORKER_BASE_MB){free} = {self.need_mb(startds):g} MB, more than its "
                f"{memory_mb} MB; at most {self.largest(memory_mb)} startds fit")
