"""The parent side of a DBN replay: reads the metadata header, then cuts whole records
by their length byte and counts them by rtype (MBO records by action letter)."""

from __future__ import annotations

import numpy as np

from ..._kernels import dbn as K
from ...errors import FeedError, TruncatedFeedError
from ..base import Framer, FrameResult
from .metadata import MAGIC, SCHEMA_MBO, MetadataError, header_length, parse, schema_name

#: names of the rtypes DBN defines (message counts and reasons)
RTYPE_NAMES = {0x00: "mbp-0", 0x01: "mbp-1", 0x0A: "mbp-10", 0x11: "ohlcv-deprecated",
               0x12: "status", 0x13: "instrument-def", 0x14: "imbalance", 0x15: "error",
               0x16: "symbol-mapping", 0x17: "system", 0x18: "statistics", 0x20: "ohlcv-1s",
               0x21: "ohlcv-1m", 0x22: "ohlcv-1h", 0x23: "ohlcv-1d", 0x24: "ohlcv-eod",
               0xA0: "mbo", 0xB1: "cmbp-1", 0xC0: "cbbo-1s", 0xC1: "cbbo-1m", 0xC2: "tcbbo",
               0xC3: "bbo-1s", 0xC4: "bbo-1m", 0xC5: "tbbo"}
SHORT = "malformed record: shorter than its rtype"
UNKNOWN = "unknown rtype"


class DbnFramer(Framer):
    unit = "record"

    def __init__(self, path, on_error="raise"):
        super().__init__(path, on_error)
        self.metadata = None
        self.rtypes = np.zeros(256, np.int64)
        self.actions = np.zeros(256, np.int64)
        self.counts = np.zeros(2, np.int64)      # tolerant mode: short, unknown rtype
        self.file_start = None      # ts_recv of the first MBO record of the feed's latest file
        self.starting = False       # a file's header read, its first MBO record not yet

    def message_counts(self):
        """MBO records by action letter (``A`` ... ``N``), other records by rtype name."""
        out = {chr(a): int(n) for a, n in enumerate(self.actions) if n}
        for r, n in enumerate(self.rtypes):
            if n and r != K.RTYPE_MBO:
                out[RTYPE_NAMES.get(r, hex(r))] = int(n)
        return out

    def _header(self, buf, byte_offset, final) -> FrameResult:
        """The metadata header at the front of buf as a batch of no record (every file of a
        feed starts with one; the decoders read its symbol mappings). A feed that ends
        within it is truncated there (a damaged compressed file: the damage is reported)."""
        try:
            n = header_length(bytes(buf[:8]))
            if n is not None and len(buf) >= n:
                meta = parse(bytes(buf[:n]))
                if meta.schema is not None and meta.schema != SCHEMA_MBO:
                    name = schema_name(meta.schema)
                    raise MetadataError(f"a DBN file of schema {name}: obook replays order-by-order "
                                        f"(mbo) files, not {name}")
                bad = meta.bad_mappings()
                if bad and self.on_error == "raise":
                    raw, symbol = bad[0]
                    raise MetadataError(f"malformed DBN metadata: the symbol mapping of {raw[:40]!r} names "
                                        f"{symbol[:40]!r}, not an instrument id")
                if bad:
                    key = "malformed symbol mapping"
                    self.skipped[key] = self.skipped.get(key, 0) + len(bad)
                self.metadata = self.metadata or meta
                self.starting = True
                return FrameResult(0, n)
        except MetadataError as e:
            return FrameResult(0, 0, FeedError(self.path, None, str(e), unit=self.unit))
        if final:
            return FrameResult(0, 0, TruncatedFeedError(self.path, None, byte_offset, "truncated DBN metadata header",
                                                        unit=self.unit))
        return FrameResult(0, 0)

    def _check_start(self, buf, seq: int, final: bool):
        """The error of a file of the feed whose first MBO record (record ``seq`` on, at the
        front of buf) is not later than the first of the file before it: the same records
        again (a copy of a file under another name) or the files out of order. Else None
        (also when buf ends before that record: the next call looks again)."""
        p, n = 0, len(buf)
        while p + 2 <= n:
            length = int(buf[p]) * 4
            if length == 0 or bytes(buf[p:p + 3]) == MAGIC:
                break                       # a bad record (its error is the framer's) or the next file
            if p + length > n:
                return None                 # the record is cut: wait for the rest
            if buf[p + 1] == K.RTYPE_MBO and length >= K.MBO_SIZE:
                self.starting = False
                ts = int.from_bytes(bytes(buf[p + K.MBO_TS_RECV:p + K.MBO_TS_RECV + 8]), "little")
                before, self.file_start = self.file_start, ts
                if before is None or ts > before:
                    return None
                return FeedError(self.path, seq, f"the file starts at ts_recv {ts}, not after the start of the file "
                                 f"before it ({before}): the same records twice (a copy of a file under another "
                                 "name?) or the files out of order; the files of one feed follow each other in "
                                 "time", unit=self.unit)
            p += length
            seq += 1
        if final or p + 2 <= n:
            self.starting = False           # a file without an MBO record
        return None

    def frame(self, buf, base_seq, byte_offset, final, max_records):
        if self.metadata is None or bytes(buf[:3]) == MAGIC:
            return self._header(buf, byte_offset, final)
        if self.starting:
            error = self._check_start(buf, base_seq, final)
            if error is not None:
                return FrameResult(0, 0, error)
        strict = self.on_error == "raise"
        k, nbytes, status = K.dbn_frame(buf, len(buf), max_records, strict,
                                        K.KNOWN_RTYPES, self.rtypes, self.actions, self.counts)
        for key, n in zip((SHORT, UNKNOWN), self.counts):
            if n:
                self.skipped[key] = int(n)
        p = nbytes
        error = None
        if status == K.FRAME_ZERO:
            error = FeedError(self.path, base_seq + k, "malformed record: length 0", unit=self.unit)
        elif status == K.FRAME_SHORT:
            rt = int(buf[p + 1]) if p + 1 < len(buf) else -1
            error = FeedError(self.path, base_seq + k, f"{SHORT} {RTYPE_NAMES.get(rt, hex(rt))} "
                              f"({int(buf[p]) * 4} bytes)", unit=self.unit)
        elif status == K.FRAME_UNKNOWN:
            error = FeedError(self.path, base_seq + k, f"{UNKNOWN} 0x{int(buf[p + 1]):02x}", unit=self.unit)
        elif status == K.FRAME_HEADER:
            pass                                    # the next call frames the header
        elif final and k < max_records and p < len(buf):
            error = TruncatedFeedError(self.path, base_seq + k, byte_offset + p, unit=self.unit)
        return FrameResult(k, p, error)
