"""A matching plan that logs the instruction rows it makes, in whichever process makes them
(a worker the forkserver starts imports this module to unpickle it)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from obook.matching.prepare import Prepared

#: the memfd that carries a plan to the forkserver's workers (obook.matching.shards.SharedPlan)
SHARED_NAME = "obook-match-input"


@dataclass
class CountedPlan(Prepared):
    """``Prepared`` made ``size`` rows at a time, each chunk's row count appended to the file
    ``log`` as ``pid count``."""
    log: str = ""
    size: int = 500

    @classmethod
    def of(cls, prep: Prepared, log, size: int = 500) -> CountedPlan:
        return cls(**{f.name: getattr(prep, f.name) for f in dataclasses.fields(prep)}, log=str(log), size=size)

    def chunks(self, size=None):
        return super().chunks(self.size)

    def _rows(self, rows, assigned):
        msg = super()._rows(rows, assigned)
        with open(self.log, "a") as f:
            f.write(f"{os.getpid()} {len(msg)}\n")
        return msg


def made_by(log) -> dict:
    """pid -> the rows it made, from ``log``."""
    out: dict = {}
    if os.path.exists(log):
        with open(log) as f:
            for line in f:
                pid, n = map(int, line.split())
                out[pid] = out.get(pid, 0) + n
    return out


def shared_held(pid: int) -> list:
    """The descriptors and mappings of process ``pid`` that are the plan's memfd."""
    held = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if SHARED_NAME in os.readlink(f"/proc/{pid}/fd/{fd}"):
                    held.append(f"fd {fd}")
            except OSError:
                pass
        with open(f"/proc/{pid}/maps") as f:
            held += [line.strip() for line in f if SHARED_NAME in line]
    except OSError:         # gone
        pass
    return held
