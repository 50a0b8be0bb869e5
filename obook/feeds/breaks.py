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
