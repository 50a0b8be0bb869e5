"""A test plug-in whose decoder may emit several events per record: the CSV format with a
decoder that hands out its events a few rows at a time (``max_events_per_record = None``),
stopping for room and resuming as the protocol of ``obook.feeds.base.Decoder`` says.

It decodes a whole batch once with the CSV decoder, then serves the events of whole records
into at most ``CAP`` rows of the engine's buffer per call (fewer when the buffer is smaller),
so the engine must grow its events buffer and call again; the output must not change.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from obook._kernels.layout import EV_SEQ, EV_WIDTH
from obook.feeds.base import DecodeResult
from obook.feeds.csv import FORMAT as CSV
from obook.feeds.csv.decoder import CsvDecoder

CAP = 5


class ChunkedCsvDecoder(CsvDecoder):
    max_events_per_record = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._next = None       # seq of the next record to serve of the pending batch

    def decode(self, buf, base_seq, events):
        if self._next != base_seq:           # a new batch: decode it whole, privately
            big = np.empty((max(1, int(np.count_nonzero(buf == 10)) + 1), EV_WIDTH), np.int64)
            d = super().decode(buf, base_seq, big)
            self._ev, self._names, self._error = big[:d.n_events], d.names, d.error
            ends = np.flatnonzero(np.asarray(buf) == 10) + 1
            self._ends = np.append(ends, len(buf)) if (len(ends) == 0 or ends[-1] < len(buf)) else ends
            self._base, self._i = base_seq, 0
        names, self._names = self._names, []
        room = min(len(events), CAP)
        k0 = base_seq - self._base                       # records of the batch already served
        first = self._i
        # whole records whose events fit in room
        last_rec, j = k0, first
        while last_rec < len(self._ends):
            seq = self._base + last_rec
            stop = j
            while stop < len(self._ev) and self._ev[stop, EV_SEQ] == seq:
                stop += 1
            if stop - first > room:
                break
            j, last_rec = stop, last_rec + 1
        events[:j - first] = self._ev[first:j]
        self._i = j
        if last_rec >= len(self._ends):                 # the whole batch is out
            self._next = None
            return DecodeResult(j - first, names, self._error)
        start = self._ends[k0 - 1] if k0 else 0
        self._next = self._base + last_rec
        return DecodeResult(j - first, names, None, n_bytes=int(self._ends[last_rec - 1] - start) if last_rec > k0 else 0,
                            n_records=last_rec - k0)


FORMAT = dataclasses.replace(CSV, name="chunked-csv", decoder="chunked_feed:ChunkedCsvDecoder")


# --------------------------------------------------------------------------- a merge hook

def merge_by_time(paths, on_error="raise"):
    """The merge hook of MERGED: the files' data lines merged by their Time column (the
    feed's own order), one header first; a Reader-like object over the result (``on_error``:
    the replay's mode, unused: the framer skips what it skips)."""
    import heapq
    import io

    from obook.feeds.sources import open_source

    streams = []
    for p in paths:
        with open_source(p) as r:
            data = bytearray()
            chunk = bytearray(1 << 16)
            while n := r.readinto(memoryview(chunk)):
                data += chunk[:n]
        header, *lines = bytes(data).splitlines(keepends=True)
        streams.append([(int(ln.split(b",", 1)[0]), ln) for ln in lines])
    merged = header + b"".join(ln for _, ln in heapq.merge(*streams, key=lambda x: x[0]))

    class _Merged(io.BytesIO):
        def pos(self):
            return self.tell()

    return _Merged(merged)


MERGED = dataclasses.replace(CSV, name="merged-csv", merge="chunked_feed:merge_by_time")
