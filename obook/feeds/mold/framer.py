"""The framer of an arbitrated capture: ITCH frames, plus the stream's own marks.

A 1-byte frame of type 0 is a message lost on every line (a message of the lines that is the
byte 0x00 comes as the frame 00 00, see ``obook._kernels.mold``); a frame of type 2 holding the
stream's ``PROBLEM_TAG`` a capture problem (see ``stream``); another frame of type 0 or 2 is a
message of the capture, skipped as the ITCH replay skips a type it does not know (and told of
among them). Strict
mode: the first of either is a FeedError after the records before it (a lost range is named
whole by its MoldUDP64 sequence numbers: the framer waits for the bytes of a run the read
cuts, up to ``MAX_LOST_AHEAD``); tolerant mode: they are counted (``lost on every line``,
``capture problem``) and the replay goes on.
"""

from __future__ import annotations

import logging

import numpy as np

from ..base import FrameResult
from ..itch.framer import ItchFramer
from .stream import PROBLEM, problem_error, problem_for_lost

log = logging.getLogger("obook")
LOST = 0
#: lost messages a strict replay reads ahead to name a lost range whole (3 bytes each)
MAX_LOST_AHEAD = 1 << 22


def _lost_run(buf, pos: int) -> int:
    """The lost-message frames (00 01 00) one after the other from ``buf[pos]``."""
    n = (len(buf) - pos) // 3
    v = np.asarray(buf[pos:pos + 3 * n]).reshape(n, 3)
    ok = (v[:, 0] == 0) & (v[:, 1] == 1) & (v[:, 2] == LOST)
    return n if ok.all() else int(np.argmin(ok))


def _lost_frames(buf, n_bytes: int, n_frames: int):
    """Of the ``n_frames`` whole frames of buf[:n_bytes]: how many are lost-message marks, and
    the index of the first other frame of type 0 (-1: none)."""
    from ..._kernels import mold as M

    offsets = np.empty(n_frames + 1, np.int64)
    k = M.frame_offsets(np.asarray(buf), n_bytes, offsets)
    at = offsets[:k]
    lengths = (np.asarray(buf)[at].astype(np.int64) << 8) | np.asarray(buf)[at + 1]
    zero = (lengths > 0) & (np.asarray(buf)[np.minimum(at + 2, n_bytes - 1)] == LOST)
    mark = zero & (lengths == 1)
    other = np.flatnonzero(zero & ~mark)
    return int(mark.sum()), int(other[0]) if len(other) else -1


class MoldFramer(ItchFramer):
    unit = "message"
    known_types = ItchFramer.known_types + bytes([LOST, PROBLEM])

    def __init__(self, path, on_error="raise"):
        super().__init__(path, on_error)
        self.zero_messages = 0            # messages of type 0x00 (not the lost-message marks)
        self.first_zero = None            # the record of the first of them

    def frame(self, buf, base_seq, byte_offset, final, max_records):
        lost0, prob0 = int(self.types[LOST]), int(self.types[PROBLEM])
        r = super().frame(buf, base_seq, byte_offset, final, max_records)
        zeros = int(self.types[LOST]) - lost0
        prob = int(self.types[PROBLEM]) - prob0
        lost = 0
        if zeros:
            lost, first = _lost_frames(buf, r.n_bytes, r.n_records)
            self.types[LOST] -= zeros - lost
            self.zero_messages += zeros - lost
            if first >= 0 and self.first_zero is None:
                self.first_zero = base_seq + first
        if not (lost or prob):
            return r
        if self.on_error != "raise":
            if lost:
                self.skipped["lost on every line"] = self.skipped.get("lost on every line", 0) + lost
            if prob:
                for _k, _pos, _t, frame, _run in self._marks(buf, r.n_bytes, PROBLEM):
                    self.skipped["capture problem"] = self.skipped.get("capture problem", 0) + 1
                    if problem_for_lost(frame):
                        self.skipped["lost on every line"] = self.skipped.get("lost on every line", 0) + 1
                    log.warning("%s (the messages before it are replayed)", problem_error(frame))
            return r
        mark = next(self._marks(buf, r.n_bytes, None), None)
        if mark is None:        # the marks come after the record the ITCH framer refused the feed at
            return r
        k, pos, typ, frame, run = mark
        if typ == LOST:
            run = _lost_run(buf, pos)           # framed or not: the whole run read so far
            open_ended = pos + 3 * (run + 1) > len(buf) and not final
            if open_ended and run < MAX_LOST_AHEAD:
                return FrameResult(k, pos, None)    # the records before it; the run again with more bytes
            last = base_seq + k + run - 1
            more = " (and maybe more)" if open_ended else ""
            what = f"message {base_seq + k}" if run == 1 else f"messages {base_seq + k} to {last}"
            error = self._error(base_seq + k, f"{what}{more} lost on every line (MoldUDP64 sequence "
                                              f"numbers {base_seq + k}..{last})")
        else:
            error = problem_error(frame)
        return FrameResult(k, pos, error)

    def _error(self, record, reason):
        from ...errors import FeedError
        return FeedError(self.path, record, reason, unit=self.unit)

    @staticmethod
    def _marks(buf, n_bytes, want):
        """(record index, byte position, type, frame bytes, run of lost frames) of the marks (a
        frame of type 2 that is a message of the capture is none)."""
        pos = k = 0
        while pos + 3 <= n_bytes:
            ln = (int(buf[pos]) << 8) | int(buf[pos + 1])
            t = int(buf[pos + 2]) if ln else -1
            if (t == LOST and ln == 1 and want in (None, LOST)) or (
                    t == PROBLEM and want in (None, PROBLEM)
                    and problem_error(bytes(buf[pos + 2:pos + 2 + ln])) is not None):
                run = 0
                if t == LOST:
                    q = pos
                    while q + 3 <= n_bytes and buf[q] == 0 and buf[q + 1] == 1 and buf[q + 2] == LOST:
                        run += 1
                        q += 3
                yield k, pos, t, bytes(buf[pos + 2:pos + 2 + ln]), run
                if t == LOST:
                    pos, k = pos + 3 * run, k + run
                    continue
            pos += 2 + ln
            k += 1

    def message_counts(self):
        counts = super().message_counts()
        counts.pop(chr(LOST), None)
        counts.pop(chr(PROBLEM), None)
        if self.zero_messages:
            counts[chr(LOST)] = self.zero_messages
        return counts

    def unknown_types(self) -> dict[int, int]:
        types = super().unknown_types()
        if self.zero_messages:
            types[LOST] = self.zero_messages
        return dict(sorted(types.items()))

    def notes(self) -> list[str]:
        """The ITCH framer's note of the frames of unknown types, the messages of type 0x00 among them."""
        if not self.zero_messages:
            return super().notes()
        kept = self.unknown, self.first_unknown
        self.unknown += self.zero_messages
        if self.first_unknown is None or self.first_zero < self.first_unknown[0]:
            self.first_unknown = (self.first_zero, LOST)
        try:
            return super().notes()
        finally:
            self.unknown, self.first_unknown = kept
