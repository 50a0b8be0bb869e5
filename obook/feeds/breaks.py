"""Trade breaks: which trades a later break message names (the trades table's ``broken``).

A break can come any time after its trade, so a streaming replay cannot know it when
the trade's row goes out. For a feed with break messages (ITCH ``B``, PITCH Trade Break)
and the trades table, the replay first reads the feed once more and collects every break
(record number, match number) with the format's kernel: one more read and framing pass
(gunzip included), no decoding and no books. A format names it as its ``prepass``
(:func:`scan` with its kernel, e.g. ``obook.feeds.itch:scan_breaks``).

Memory: while scanning, the breaks found are merged every ``COMPACT_EVERY`` into one sorted
array of the last break per match number (repeats of a match cost nothing); past
``SPILL_ENTRIES`` distinct matches the sorted arrays live in an unlinked temporary file
(mapped: the page cache holds them, not the process's heap).
"""

from __future__ import annotations

import logging
import os
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._kernels.layout import MAX_BATCH_RECORDS
from ..errors import ObookError
from .sources import iter_batches


COMPACT_EVERY = 1 << 20
SPILL_ENTRIES = 4 << 20       # 64 MiB of (match, seq) pairs


def _spilled(a: np.ndarray) -> np.ndarray:
    """``a`` in an unlinked temporary file, mapped (freed with the last reference); ``a``
    itself when the temporary folder has no room for it. The file's blocks are reserved
    first: a mapped write past a full disk is a SIGBUS, not an error."""
    try:
        with tempfile.TemporaryFile(prefix="obook-breaks-") as f:
            if a.nbytes:
                os.posix_fallocate(f.fileno(), 0, a.nbytes)
            out = np.memmap(f, dtype=a.dtype, mode="w+", shape=a.shape)
    except OSError as e:
        logging.getLogger("obook").warning("trade breaks kept in memory (%d bytes): no room for them in the "
                                           "temporary folder: %s", a.nbytes, e.strerror or e)
        return a
    out[:] = a
    return out


class Breaks:
    """The last break of every broken match number (sorted, for lookups)."""

    def __init__(self, seqs: np.ndarray, matches: np.ndarray):
        order = np.lexsort((seqs, matches))
        matches, seqs = matches[order], seqs[order]
        last = np.ones(len(matches), bool)
        last[:-1] = matches[1:] != matches[:-1]
        self.matches = matches[last]
        self.last_seq = seqs[last]
        if len(self.matches) > SPILL_ENTRIES:
            self.matches, self.last_seq = _spilled(self.matches), _spilled(self.last_seq)

    @classmethod
    def scan(cls, path, framer, kernel, progress=None) -> "Breaks":
        """Every break of the feed that ``framer`` (a fresh framer of the format) frames, up
        to a framing error, found by the format's ``kernel(buf, n_records, base_seq, seqs,
        matches) -> count``; ``progress(bytes read)`` after each batch."""
        seqs = np.empty(MAX_BATCH_RECORDS, np.int64)
        matches = np.empty(MAX_BATCH_RECORDS, np.int64)
        found_seqs, found_matches, pending = [], [], 0
        feed = iter_batches(path, framer)
        try:
            for batch in feed:
                n = kernel(batch.data, batch.n_records, batch.base_seq, seqs, matches)
                found_seqs.append(seqs[:n].copy())
                found_matches.append(matches[:n].copy())
                pending += n
                if pending >= COMPACT_EVERY:     # one sorted array of the last break per match
                    merged = cls(np.concatenate(found_seqs), np.concatenate(found_matches))
                    found_seqs, found_matches = [merged.last_seq], [merged.matches]
                    pending = 0
                if progress:
                    progress(batch.source_pos)
                if batch.error is not None:
                    break
        except ObookError:
            pass        # an unreadable part: the replay itself reports it, after the rows before it
        finally:
            feed.close()
        return cls(np.concatenate(found_seqs or [seqs[:0]]), np.concatenate(found_matches or [matches[:0]]))

    def __len__(self) -> int:
        return len(self.matches)

    def broken(self, seq: np.ndarray, match: np.ndarray, is_trade: np.ndarray) -> np.ndarray:
        """For rows (seq, match as int64): whether a B after the row names its match."""
        if len(self.matches) == 0:
            return np.zeros(len(seq), bool)
        i = np.minimum(np.searchsorted(self.matches, match), len(self.matches) - 1)
        return is_trade & (self.matches[i] == match) & (self.last_seq[i] > seq)


def delivered(batches, record: int) -> Breaks | None:
    """The breaks among the trades rows ``batches`` (B rows included) of the records before
    ``record``: those a replay stopped there delivers (a break of a later record never came).
    None: no row is broken, nothing to redo."""
    seqs, matches, any_broken = [], [], False
    for batch in batches:
        any_broken = any_broken or pc.any(batch.column("broken")).as_py()
        keep = pc.and_(pc.equal(batch.column("kind"), "B"), pc.less(batch.column("seq"), record))
        b = batch.filter(keep)
        seqs.append(np.asarray(b.column("seq"), np.int64))
        matches.append(_int64(b.column("match")))
    if not any_broken:
        return None
    return Breaks(np.concatenate(seqs or [np.empty(0, np.int64)]), np.concatenate(matches or [np.empty(0, np.int64)]))


def rebroken(batch, breaks: Breaks):
    """The trades ``batch`` (a record batch or table) with ``broken`` as ``breaks`` say."""
    is_trade = ~np.asarray(pc.fill_null(pc.equal(batch.column("kind"), "B"), False))
    broken = breaks.broken(np.asarray(batch.column("seq"), np.int64), _int64(batch.column("match")), is_trade)
    i = batch.schema.get_field_index("broken")
    return batch.set_column(i, batch.schema.field(i), pa.array(broken))


def _int64(match) -> np.ndarray:
    """A ``match`` column (uint64, null where none) as the int64 the breaks are kept in."""
    return np.asarray(pc.fill_null(match, 0), np.uint64).view(np.int64)
