"""Reading a feed in blocks of at least 1 MiB and cutting them into batches of whole records."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import FeedError, ObookError
from ..feeds import open_feed
from ..feeds.base import Framer
from .._kernels.layout import MAX_BATCH_RECORDS

BLOCK_SIZE = 1 << 20


@dataclass
class Batch:
    data: np.ndarray          # uint8 view of whole records; valid until the next batch is taken
    base_seq: int             # number of the first record
    offset: int               # byte offset of data[0] in the (decompressed) feed
    n_records: int
    error: FeedError | None   # raise after this batch's rows are delivered
    source_pos: int = 0       # bytes of the file (compressed, for .gz) read so far


def _read_full(f, view: memoryview) -> int:
    got = 0
    while got < len(view):
        n = f.readinto(view[got:])
        if not n:
            break
        got += n
    return got


def iter_batches(path: str | Path, framer: Framer, block_size: int = BLOCK_SIZE,
                 max_records: int = MAX_BATCH_RECORDS) -> Iterator[Batch]:
    """Batches of whole records, read ``block_size`` bytes at a time (streamed, gunzipped)."""
    buf = np.empty(2 * block_size, dtype=np.uint8)
    have = 0
    seq = 1
    offset = 0
    eof = False
    with open_feed(path) as f:
        raw = getattr(f, "fileobj", f)
        while not eof:
            if len(buf) - have < block_size:
                grown = np.empty(2 * len(buf), dtype=np.uint8)
                grown[:have] = buf[:have]
                buf = grown
            try:
                got = _read_full(f, memoryview(buf)[have:have + block_size])
            except (OSError, EOFError) as e:  # gzip errors are OSError / EOFError
                raise ObookError(f"{path}: read failed at byte {offset + have}: {e}") from e
            eof = got < block_size
            have += got
            source_pos = raw.tell()
            pos = 0
            while True:
                r = framer.frame(buf[pos:have], seq, offset, eof, max_records)
                if r.n_bytes == 0 and r.n_records == 0 and r.error is None:
                    break
                yield Batch(buf[pos:pos + r.n_bytes], seq, offset, r.n_records, r.error, source_pos)
                if r.error is not None:
                    return
                pos += r.n_bytes
                seq += r.n_records
                offset += r.n_bytes
            tail = have - pos
            buf[:tail] = buf[pos:have]
            have = tail
