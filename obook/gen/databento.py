"""Synthetic Databento MBO flows (deterministic for a seed) and a DBN writer.

``mbo_flow(records, instruments, seed)`` returns a structured array of MBO records
(``MBO_DTYPE``, the byte layout of ``databento_dbn.MBOMsg``) that follows Databento's
book-building rules and exercises them: adds; full and partial cancels; modifies that
keep priority (same price, size down) and lose it (price change, size up); modifies of
unknown orders (an add, by Databento's rule); trades (T with the aggressor side, one in ten with none: N; F fills
of resting orders, then C cancels of what they filled) in events of several records with
F_LAST on the last one only (some events end in an F or in an N record); clears (R);
order ids above 2**63; several instruments. Every record is valid.

``write_dbn(path, flow, version, zstd, symbols)`` writes a DBN file with
``databento_dbn``'s encoder (``Metadata.encode`` and, with ``encoder=True``, every
record through ``MBOMsg``; otherwise the array's bytes, identical and much faster).
"""

from __future__ import annotations

import random

import numpy as np

from .._kernels.dbn import MBO_DTYPE

__all__ = ["MBO_DTYPE", "mbo_flow", "write_dbn", "symbol_of", "PRICE_TICK"]

PRICE_TICK = 10_000_000         # $0.01 in DBN's 1e-9 units
F_LAST = 0x80
START_NS = 1_700_000_000_000_000_000
BIG_ID = 1 << 63
#: bytes a message takes at least: on disk (plain, compressed) and in memory while the day is
#: generated (0: written as it goes); a little below what 1 M messages measure, so that a size
#: `obook gen` refuses for want of room could not have fitted
MIN_BYTES = (54, 10, 180)
CAP = 120           # live orders a book keeps at most (an add to a full book is a cancel)


def symbol_of(i: int) -> str:
    return f"SYM{i}"


def session_start(date: str) -> int:
    """09:30 New York on ``date`` (YYYY-MM-DD) as UTC epoch ns."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    opening = dt.datetime.combine(dt.date.fromisoformat(date), dt.time(9, 30), ZoneInfo("America/New_York"))
    return int(opening.timestamp()) * 10**9


def mbo_flow(records: int, instruments: int = 3, seed: int = 0, big_ids: bool = True,
             clears: float = 0.003, start_ns: int = START_NS, drift: bool = True) -> np.ndarray:
    """About ``records`` MBO records (a whole last event more at most) from ``start_ns``
    (UTC epoch ns); ``clears``: the share of steps that clear a book (besides the clear
    of every book at the start). Each step picks an instrument and adds near its mid
    (35%), cancels (15%), modifies (15%; 3% more of an unknown order), trades (12%),
    writes an event of several adds and cancels (10%) or moves its mid and adds;
    ``drift=False``: the mids stay where they start (old orders are never left behind on
    the wrong side, so the book never crosses)."""
    from .databento_flow import STEP_RECORDS, flow

    rng = random.Random(seed)
    ids = [7 + 1000 * i + rng.randrange(0, 1000) for i in range(instruments)]
    if instruments > 2:
        ids[-1] = 4_000_000_000 + seed % 1000              # an id near the top of u32
    mids = np.array([100_00 + 500 * k for k in range(instruments)], np.int64)   # in ticks
    st = np.array([(seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % 2**64 or 1], dtype=np.uint64)
    cols = tuple(np.zeros(records + STEP_RECORDS + instruments, np.int64) for _ in range(8))
    n = flow(records, np.array(ids, np.int64), mids, st, 0, clears, start_ns, CAP, cols, drift)
    ts, inst, oid, price, size, flags, action, side = (c[:n] for c in cols)
    out = np.zeros(n, dtype=MBO_DTYPE)
    out["length"], out["rtype"], out["publisher_id"], out["ts_in_delta"] = 14, 0xA0, 1, 250
    out["instrument_id"], out["ts_event"], out["ts_recv"] = inst, ts, ts + 1000
    base = np.uint64(BIG_ID + 11 if big_ids else 1000)
    out["order_id"] = np.where(oid != 0, oid.astype(np.uint64) + base, np.uint64(0))
    out["price"], out["size"], out["flags"] = price, size, flags
    out["action"], out["side"] = action.astype(np.uint8).view("S1"), side.astype(np.uint8).view("S1")
    out["sequence"] = np.arange(1, n + 1)
    return out


def _records_bytes(flow: np.ndarray, encoder: bool) -> bytes:
    if not encoder:
        return np.ascontiguousarray(flow).tobytes()
    import databento_dbn as d
    out = []
    for r in flow.tolist():
        out.append(bytes(d.MBOMsg(
            publisher_id=r[2], instrument_id=r[3], ts_event=r[4], order_id=r[5], price=r[6],
            size=r[7], action=d.Action(r[10].decode()), side=d.Side(r[11].decode()), ts_recv=r[12],
            flags=r[8], channel_id=r[9], ts_in_delta=r[13], sequence=r[14])))
    return b"".join(out)


def metadata_bytes(version: int = 3, instrument_ids=(), symbols=None, start_ns: int = START_NS) -> bytes:
    """DBN metadata (databento_dbn's encoder) with a mapping symbol -> id per instrument."""
    import datetime as dt
    from types import SimpleNamespace as NS

    import databento_dbn as d
    symbols = symbols or [symbol_of(k) for k in range(len(instrument_ids))]
    day = dt.datetime.fromtimestamp(start_ns // 10**9, dt.timezone.utc).date()
    mappings = [NS(raw_symbol=s, intervals=[NS(start_date=day, end_date=day + dt.timedelta(days=1),
                                                symbol=str(iid))])
                for s, iid in zip(symbols, instrument_ids)]
    meta = d.Metadata(dataset="XNAS.ITCH", start=start_ns, stype_in=d.SType.RAW_SYMBOL,
                      stype_out=d.SType.INSTRUMENT_ID, schema=d.Schema.MBO, symbols=list(symbols),
                      mappings=mappings, end=start_ns + 10**13, version=version)
    return meta.encode()


def write_dbn(path, flow: np.ndarray, version: int = 3, zstd: bool = False, symbols=None,
              encoder: bool = True, extra: bytes = b"", mappings: bool = True, start_ns: int = START_NS,
              gz: bool = False) -> None:
    """Write ``flow`` as a DBN file (zstd-compressed with ``zstd``, gzipped with ``gz``: level 1,
    no name or time in the gzip header); ``extra`` bytes (other records) go after the first
    record."""
    ids = list(dict.fromkeys(flow["instrument_id"].tolist())) if mappings else []
    body = _records_bytes(flow, encoder)
    data = metadata_bytes(version, ids, symbols, start_ns) + body[:56] + extra + body[56:]
    if zstd:
        import zstandard
        data = zstandard.ZstdCompressor(level=3).compress(data)
    elif gz:
        import gzip
        data = gzip.compress(data, compresslevel=1, mtime=0)
    with open(path, "wb") as f:
        f.write(data)
