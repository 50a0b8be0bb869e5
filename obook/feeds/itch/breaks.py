"""Trade breaks: which trades a later ``B`` message breaks (the trades table's ``broken``).

A break can come any time after its trade, so a streaming replay cannot know it when
the trade's row goes out. For an ITCH feed with the trades table, the replay first reads
the feed once more and collects every ``B`` (record number, match number): one more
read and framing pass (gunzip included), no decoding and no books.
"""

from __future__ import annotations

import numpy as np

from ..._kernels.itch import itch_breaks
from ..._kernels.layout import MAX_BATCH_RECORDS
from ...errors import ObookError
from ..sources import iter_batches


class Breaks:
    """The last break of every broken match number (sorted, for lookups)."""

    def __init__(self, seqs: np.ndarray, matches: np.ndarray):
        order = np.lexsort((seqs, matches))
        matches, seqs = matches[order], seqs[order]
        last = np.ones(len(matches), bool)
        last[:-1] = matches[1:] != matches[:-1]
        self.matches = matches[last]
        self.last_seq = seqs[last]

    @classmethod
    def scan(cls, path, framer, progress=None) -> "Breaks":
        """Every B of the feed that ``framer`` (a fresh ItchFramer) frames, up to a framing
        error; ``progress(bytes read)`` after each batch."""
        seqs = np.empty(MAX_BATCH_RECORDS, np.int64)
        matches = np.empty(MAX_BATCH_RECORDS, np.int64)
        found_seqs, found_matches = [], []
        feed = iter_batches(path, framer)
        try:
            for batch in feed:
                n = itch_breaks(batch.data, batch.n_records, batch.base_seq, seqs, matches)
                found_seqs.append(seqs[:n].copy())
                found_matches.append(matches[:n].copy())
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
