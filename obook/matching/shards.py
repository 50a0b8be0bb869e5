"""Instruments sharded over worker processes, merged back in input order.

Book b goes to worker ``b % workers``; each worker matches its books' instructions and
sends back its int64 rows. Every row carries its instruction's row number (``seq``) and
book, and all rows of one instruction come from one worker in kernel order, so a stable
sort by (seq, book) gives the same tables for any number of workers. Workers start like
the replay's (fork when safe, else the forkserver) and never outlive the call.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from .._kernels.match_layout import E_SEQ
from ..errors import WorkerError
from .books import TABLES, run_books

log = logging.getLogger("obook")


def _worker(conn, prep, books, msg, want, stp, levels, day_end):
    from ..engine.worker_main import _die_with_parent

    _die_with_parent()
    try:
        conn.send(run_books(prep, books, msg, want=want, stp=stp, levels=levels, day_end=day_end))
    except Exception as e:  # noqa: BLE001 - reported to the parent, which raises
        conn.send(("failed", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def merge(parts: list[dict]) -> dict:
    """One table per name from the workers' rows: stable sort by (seq, book)."""
    out = {}
    for t in TABLES:
        rows = np.concatenate([p[t] for p in parts]) if parts else np.zeros((0, 1), np.int64)
        if len(parts) > 1 and len(rows):
            rows = rows[np.lexsort((rows[:, 2], rows[:, E_SEQ]))]
        out[t] = rows
    return out


def run_sharded(prep, workers: int, *, want: int, stp: int, levels: int, day_end: bool) -> dict:
    nb = len(prep.instruments)
    workers = max(1, min(workers, nb))
    all_books = np.arange(nb, dtype=np.int64)
    if workers == 1:
        return merge([run_books(prep, all_books, prep.msg, want=want, stp=stp, levels=levels,
                                day_end=day_end)])
    from ..engine.workers import _without_main, mp_context

    ctx = mp_context()
    light = dataclasses.replace(prep, msg=prep.msg[:0])    # each worker gets its own rows only
    procs, conns = [], []
    try:
        for w in range(workers):
            books = all_books[all_books % workers == w]
            msg = prep.msg[prep.msg.rows["book"] % workers == w]
            parent, child = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker, name=f"obook-match-{w}", daemon=True,
                            args=(child, light, books, msg, want, stp, levels, day_end))
            with _without_main():
                p.start()
            child.close()
            procs.append(p)
            conns.append(parent)
        parts = []
        for w, c in enumerate(conns):
            try:
                r = c.recv()
            except (EOFError, OSError) as e:
                procs[w].join(0.5)
                raise WorkerError(f"match worker {w} (pid {procs[w].pid}) died "
                                  f"(exit code {procs[w].exitcode})") from e
            if isinstance(r, tuple):
                raise WorkerError(f"match worker {w} failed: {r[1]}")
            parts.append(r)
        return merge(parts)
    finally:
        for c in conns:
            c.close()
        for p in procs:
            p.join(2.0)
            if p.exitcode is None:
                p.kill()
                p.join()
