"""The side tables of an arbitrated capture: the ITCH ones, ``gaps`` and ``line_stats``;
the messages reader; the per-record columns every replay table gets."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..base import SideTable
from ..itch import side as itch_side
from .lines import LINE_NAMES, as_lines
from .stream import LINE_TYPE, STAT_NAMES, TS_TYPE, arbitrate

#: the columns added to every replay table (values from the stream's ``record_columns``)
RECORD_FIELDS = [pa.field("mold_seq", pa.uint64()), pa.field("line", LINE_TYPE), pa.field("ts_recv", TS_TYPE)]


def source(path):
    """What the engine reads for a capture feed: its lines (see ``lines``), their reading
    and arbitration started in a thread (the replay's workers start meanwhile)."""
    return as_lines(path).prefetch()


def _itch_side(path, names, on_error="raise", counts=None):
    yield from itch_side.side_batches(as_lines(path), names, on_error, counts)


def read_messages(path, on_error: str = "raise") -> pa.RecordBatchReader:
    """The ITCH messages of the arbitrated lines: the stream's own marks (records of types 0x00
    and 0x02 that no line delivered: lost messages, a capture problem) left out, the lines'
    messages of those types kept (as the plain ITCH reader keeps a type it does not know)."""
    from ..itch.messages import read_itch

    lines = as_lines(path)
    reader = read_itch(lines, on_error)
    arb = []

    def batches():
        for b in reader:
            marks = pc.is_in(b.column("type"), pa.array(["\x00", "\x02"]))
            if pc.any(marks).as_py():
                if not arb:
                    arb.append(arbitrate(lines))
                who, hi = arb[0].who, arb[0].hi
                seq = b.column("seq").to_numpy().astype(np.int64)
                delivered = (seq >= 1) & (seq < hi)
                delivered[delivered] = who[seq[delivered]] >= 0
                b = b.filter(pc.or_(pc.invert(marks), pa.array(delivered)))
            yield b
    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def _schema(name, fields):
    return pa.schema(fields, metadata={b"obook.table": name.encode()})


GAPS_SCHEMA = _schema("gaps", [
    pa.field("first_seq", pa.uint64()), pa.field("last_seq", pa.uint64()), pa.field("count", pa.uint64()),
    pa.field("ts_before", TS_TYPE), pa.field("ts_after", TS_TYPE)])
LINE_STATS_SCHEMA = _schema("line_stats", [
    pa.field("line", pa.string()), pa.field("capture", pa.string()), pa.field("address", pa.string()),
    pa.field("port", pa.uint16()), *[pa.field(n, pa.int64()) for n in STAT_NAMES]])


def gaps_batch(gaps) -> pa.RecordBatch:
    """The ``gaps`` table of (first_seq, count, ts_before, ts_after) ranges (a stamp that is
    None or negative: null); a capture replay's and a live listener's."""
    first = np.array([g[0] for g in gaps], np.uint64)
    n = np.array([g[1] for g in gaps], np.uint64)
    stamps = [np.array([-1 if g[k] is None else g[k] for g in gaps], np.int64) for k in (2, 3)]
    return pa.RecordBatch.from_arrays(
        [pa.array(first), pa.array(first + n - 1 if len(gaps) else first), pa.array(n),
         *(pa.array(s, TS_TYPE, mask=s < 0) for s in stamps)], schema=GAPS_SCHEMA)


def line_stats_batch(rows) -> pa.RecordBatch:
    """The ``line_stats`` table of [line, capture, address, port, *counts in STAT_NAMES order]
    rows; a capture replay's and a live listener's."""
    cols = list(zip(*rows)) if rows else [[] for _ in LINE_STATS_SCHEMA]
    return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, LINE_STATS_SCHEMA)],
                                      schema=LINE_STATS_SCHEMA)


def _own(path, names, on_error="raise", counts=None):
    from .capture import ip_text

    arb = arbitrate(as_lines(path))
    for name in names:
        if name == "gaps":
            yield name, gaps_batch(arb.gaps())
        else:
            yield name, line_stats_batch([[LINE_NAMES[i], spec.path, ip_text(ip), port, *arb.stats[i].tolist()]
                                          for i, (spec, ip, port) in enumerate(arb.lines)])


SYMBOLS = replace(itch_side.SYMBOLS, read=_itch_side)
SYSTEM_EVENTS = replace(itch_side.SYSTEM_EVENTS, read=_itch_side)
TRADING_ACTIONS = replace(itch_side.TRADING_ACTIONS, read=_itch_side)
CROSS_TRADES = replace(itch_side.CROSS_TRADES, read=_itch_side)
GAPS = SideTable("gaps", GAPS_SCHEMA, _own)
LINE_STATS = SideTable("line_stats", LINE_STATS_SCHEMA, _own)


def session_date(path):
    """The New York date of the session the capture replays: its first MoldUDP64 packet on the
    first line (see ``capture.dating_packet``; None: no packet)."""
    from .capture import first_packet_time, new_york_date

    first = as_lines(path)[0]
    ns = first_packet_time(first.path, first.ip, first.port)
    return None if ns is None else new_york_date(ns)
