"""One table of the matching engine streamed from several workers, merged in input order.

Each worker (a shard of the books, as in :mod:`obook.matching.shards`) sends the table's
rows over its pipe each time the kernels flush them, with ``upto``: every row of its
books with a ``seq`` below it is out. Every row of a ``seq`` below the least ``upto`` is
then final, and goes out merged in (seq, book) order, as :func:`merge_table` orders the
whole table. A worker is read when it holds the others back, or while the parent keeps
few of its rows: a worker ahead waits on its pipe, so the rows held stay bounded and a
consumer that stops early stops every worker.
"""

from __future__ import annotations

import contextlib
import pickle
import socket
import struct

import numpy as np

from .._kernels.match_layout import E_SEQ
from ..errors import WorkerError
from .books import CHUNK, DONE, stream_books, widths
from .shards import awaited, detached, died, merge_table, pipe_socket, shard_workers

#: a worker that holds nobody back is read while the parent keeps fewer of its rows than this
AHEAD = 4 * CHUNK


def _worker(conn, prep, books, table, want, stp, levels, day_end, chunk):
    """Sends ``(upto, rows)`` a flush, the rows (if any) as the bytes that follow;
    ``("failed", reason)`` on an error."""
    detached()
    try:
        for upto, rows in stream_books(prep, books, prep.chunks(), want=want, stp=stp, levels=levels, day_end=day_end,
                                       chunk=chunk):
            got = rows[table]
            got = got[0] if len(got) == 1 else np.concatenate(got) if got else np.zeros((0, 1), np.int64)
            conn.send((upto, len(got)))
            if len(got):
                conn.send_bytes(np.ascontiguousarray(got))
    except (BrokenPipeError, ConnectionResetError):     # the parent stopped reading
        pass
    except Exception as e:  # noqa: BLE001 - reported to the parent, which raises
        try:
            conn.send(("failed", f"{type(e).__name__}: {e}"))
        except OSError:
            pass
    finally:
        conn.close()


def stream_shards(prep, workers: int, table: str, *, want: int, stp: int, levels: int, day_end: bool):
    """The rows of ``table``, matched by ``workers`` processes, as blocks of int64 rows
    (arrays or :class:`obook.matching.shards.Merged`) in the order of ``match``'s table."""
    from . import books as books_mod

    width = widths(levels)[table]
    with shard_workers(prep, workers, _worker, table, want, stp, levels, day_end, books_mod.CHUNK) as (procs, conns), \
            contextlib.ExitStack() as socks:
        pipes = [_Pipe(socks.enter_context(pipe_socket(c)), conns, procs, w) for w, c in enumerate(conns)]
        n = len(conns)
        upto, held = [0] * n, [[] for _ in range(n)]
        while min(upto) < DONE:
            low = min(upto)
            ready = [w for w in range(n) if upto[w] < DONE and
                     (upto[w] == low or sum(len(r) for r in held[w]) < AHEAD)]
            for c in awaited(conns, procs, ready):
                w = conns.index(c)
                upto[w], rows = _received(pipes[w], width)
                if len(rows):
                    held[w].append(rows)
            if min(upto) > low:
                block = _final(held, min(upto))
                if block is not None:
                    yield block


class _Pipe:
    """Worker ``w``'s pipe, read a message at a time (multiprocessing's framing: a 4-byte
    big-endian size, or -1 and 8 bytes), each part once it is there: a worker stopped
    in the middle of a message is a WorkerError naming it (``awaited``), not a read that
    waits for good."""

    def __init__(self, sock, conns: list, procs: list, w: int):
        self.sock, self.conns, self.procs, self.w = sock, conns, procs, w

    def message(self) -> bytearray:
        size, = struct.unpack("!i", self._exactly(4))
        if size == -1:
            size, = struct.unpack("!Q", self._exactly(8))
        return self._exactly(size)

    def _exactly(self, n: int) -> bytearray:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            try:
                k = self.sock.recv_into(view[got:], n - got, socket.MSG_DONTWAIT)
            except BlockingIOError:
                awaited(self.conns, self.procs, [self.w])
                continue
            if not k:
                raise EOFError(f"match worker {self.w}'s pipe closed")
            got += k
        return buf


def _received(pipe: _Pipe, width: int):
    """The worker's next ``(upto, rows)``."""
    try:
        said = pickle.loads(pipe.message())
        if said[0] == "failed":
            raise WorkerError(f"match worker {pipe.w} failed: {said[1]}")
        upto, n = said
        rows = np.frombuffer(pipe.message(), np.int64).reshape(n, width) if n else np.zeros((0, width), np.int64)
    except (EOFError, OSError) as e:
        raise died(pipe.procs, pipe.w) from e
    return upto, rows


def _final(held: list, upto: int):
    """The held rows of a ``seq`` below ``upto``, merged (None: none), taken out of ``held``
    (each worker's list of non-empty row blocks; only the block ``upto`` falls in is cut)."""
    parts = []
    for blocks in held:
        taken = []
        while blocks and blocks[0][-1, E_SEQ] < upto:
            taken.append(blocks.pop(0))
        if blocks and blocks[0][0, E_SEQ] < upto:
            cut = int(np.searchsorted(blocks[0][:, E_SEQ], upto, side="left"))
            taken.append(blocks[0][:cut])
            blocks[0] = blocks[0][cut:]
        if taken:
            parts.append(taken[0] if len(taken) == 1 else np.concatenate(taken))
    if not parts:
        return None
    return merge_table([{"rows": [p]} for p in parts], "rows")[0]
