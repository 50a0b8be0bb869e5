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
CAP = 120           # live orders a book keeps at most (an add to a full book is a cancel)


def _between(rng, lo: int, hi: int) -> int:
    """A random integer in [lo, hi) (random() scaled: a few times faster than randrange)."""
    return lo + int(rng.random() * (hi - lo))


def symbol_of(i: int) -> str:
    return f"SYM{i}"


#: the MBO fields the generator varies, and the values of the others
_VARYING = ("instrument_id", "ts_event", "order_id", "price", "size", "flags", "action", "side")
_FIXED = {"length": 14, "rtype": 0xA0, "publisher_id": 1, "channel_id": 0, "ts_in_delta": 250}


class _Gen:
    def __init__(self, instruments: int, seed: int, big_ids: bool, clears: float, start_ns: int = START_NS):
        self.rng = random.Random(seed)
        self.clears = clears
        self.ids = [7 + 1000 * i + _between(self.rng, 0, 1000) for i in range(instruments)]
        if instruments > 2:
            self.ids[-1] = 4_000_000_000 + seed % 1000     # an id near the top of u32
        self.books = {iid: {} for iid in self.ids}        # order id -> [side, price, size]
        self.mid = {iid: 100_00 + 500 * k for k, iid in enumerate(self.ids)}   # in ticks
        self.next_id = BIG_ID + 11 if big_ids else 1000
        #: the records' varying fields (``_VARYING``), a tuple each (an array at the end)
        self.rows: list[tuple] = []
        self._random = self.rng.random
        self.t = start_ns

    def rec(self, iid, action, side, order_id=0, price_ticks=None, size=0, last=True):
        self.t += 1 + int(self._random() * 4999)
        price = 0x7FFFFFFFFFFFFFFF if price_ticks is None else price_ticks * PRICE_TICK
        self.rows.append((iid, self.t, order_id, price, size, F_LAST if last else 0, action, side))

    def array(self) -> np.ndarray:
        """The records (``MBO_DTYPE``)."""
        n = len(self.rows)
        out = np.zeros(n, dtype=MBO_DTYPE)
        for c, values in zip(_VARYING, zip(*self.rows)):
            out[c] = values
        for c, v in _FIXED.items():
            out[c] = v
        out["ts_recv"] = out["ts_event"] + 1000
        out["sequence"] = np.arange(1, n + 1)
        return out

    def new_id(self):
        self.next_id += _between(self.rng, 1, 4)
        return self.next_id

    def add_order(self, iid, last=True):
        side = b"B" if self.rng.random() < 0.5 else b"A"
        off = _between(self.rng, 1, 8)
        px = self.mid[iid] - off if side == b"B" else self.mid[iid] + off
        size = _between(self.rng, 1, 10) * 100
        oid = self.new_id()
        self.books[iid][oid] = [side, px, size]
        self.rec(iid, b"A", side, oid, px, size, last)

    def pick(self, iid):
        book = self.books[iid]
        if not book:
            return None
        keys = list(book)
        return keys[_between(self.rng, 0, len(keys))]

    def cancel(self, iid, oid, size, last=True):
        side, px, have = self.books[iid][oid]
        if size >= have:
            size = have
            del self.books[iid][oid]
        else:
            self.books[iid][oid][2] = have - size
        self.rec(iid, b"C", side, oid, px, size, last)

    def modify(self, iid, oid, last=True):
        side, px, have = self.books[iid][oid]
        r = self.rng.random()
        if r < 0.4:
            size = max(1, have - 100 * _between(self.rng, 1, 3))   # keeps priority
        elif r < 0.7:
            size = have + 100                                            # loses it
        else:
            size = have
            px = px + (1 if self.rng.random() < 0.5 else -1) * _between(self.rng, 1, 3)
            px = min(px, self.mid[iid] - 1) if side == b"B" else max(px, self.mid[iid] + 1)
        self.books[iid][oid] = [side, px, size]
        self.rec(iid, b"M", side, oid, px, size, last)

    def trade(self, iid):
        """An aggressor takes the best orders of one side: T, then F and C per fill."""
        book = self.books[iid]
        side = b"B" if self.rng.random() < 0.5 else b"A"   # resting side
        rest = [(o, v) for o, v in book.items() if v[0] == side]
        if not rest:
            return self.add_order(iid)
        best = max(v[1] for _, v in rest) if side == b"B" else min(v[1] for _, v in rest)
        queue = [o for o, v in rest if v[1] == best]       # dict order is arrival order here
        want = _between(self.rng, 1, 4)
        fills = []
        for oid in queue[:want]:
            have = book[oid][2]
            take = have if self.rng.random() < 0.6 else max(1, have // 2)
            fills.append((oid, take))
        total = sum(t for _, t in fills)
        aggressor = b"A" if side == b"B" else b"B"
        if self.rng.random() < 0.1:                        # no aggressor known (auction, cross)
            aggressor = b"N"
        self.rec(iid, b"T", aggressor, 0, best, total, last=False)
        end_in_fill = self.rng.random() < 0.15
        for j, (oid, take) in enumerate(fills):
            self.rec(iid, b"F", side, oid, best, take, last=False)
        for j, (oid, take) in enumerate(fills):
            self.cancel(iid, oid, take, last=(j == len(fills) - 1 and not end_in_fill))
        if end_in_fill:
            oid, take = fills[0]
            self.rec(iid, b"F", side, 0, best, 0, last=True)

    def step(self):
        rng = self.rng
        iid = self.ids[_between(rng, 0, len(self.ids))]
        book = self.books[iid]
        r = rng.random()
        if r < self.clears:                                 # clear, then a small snapshot
            book.clear()
            self.rec(iid, b"R", b"N", 0, None, 0, last=True)
            for j in range(3):
                self.add_order(iid, last=(j == 2))
        elif (r < 0.35 or len(book) < 4) and len(book) < CAP:
            self.add_order(iid)
        elif r < 0.5 or len(book) >= CAP:
            oid = self.pick(iid)
            self.cancel(iid, oid, book[oid][2] if rng.random() < 0.6 else 100)
        elif r < 0.65:
            self.modify(iid, self.pick(iid))
        elif r < 0.68:                                      # modify of an unknown order: an add
            side = b"B" if rng.random() < 0.5 else b"A"
            px = self.mid[iid] - 2 if side == b"B" else self.mid[iid] + 2
            oid = self.new_id()
            book[oid] = [side, px, 300]
            self.rec(iid, b"M", side, oid, px, 300)
        elif r < 0.8:
            self.trade(iid)
        elif r < 0.9:                                       # an event of several records
            n = _between(rng, 2, 5)
            for j in range(n):
                last = j == n - 1 and rng.random() < 0.8
                if rng.random() < 0.5 or len(book) < 2:
                    self.add_order(iid, last)
                else:
                    oid = self.pick(iid)
                    self.cancel(iid, oid, book[oid][2], last)
            if not self.rows[-1][5] & F_LAST:               # closed by an N record
                self.rec(iid, b"N", b"N", 0, None, 0, last=True)
        else:
            self.mid[iid] += _between(rng, -1, 2)
            self.add_order(iid)


def session_start(date: str) -> int:
    """09:30 New York on ``date`` (YYYY-MM-DD) as UTC epoch ns."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    opening = dt.datetime.combine(dt.date.fromisoformat(date), dt.time(9, 30), ZoneInfo("America/New_York"))
    return int(opening.timestamp()) * 10**9


def mbo_flow(records: int, instruments: int = 3, seed: int = 0, big_ids: bool = True,
             clears: float = 0.003, start_ns: int = START_NS) -> np.ndarray:
    """About ``records`` MBO records (a whole last event more at most) from ``start_ns``
    (UTC epoch ns); ``clears``: the share of steps that clear a book (besides the clear
    of every book at the start)."""
    g = _Gen(instruments, seed, big_ids, clears, start_ns)
    for iid in g.ids:                                       # every day starts with a clear
        g.rec(iid, b"R", b"N", 0, None, 0, last=True)
    while len(g.rows) < records:
        g.step()
    return g.array()


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
              encoder: bool = True, extra: bytes = b"", mappings: bool = True, start_ns: int = START_NS) -> None:
    """Write ``flow`` as a DBN file (zstd-compressed with ``zstd``); ``extra`` bytes (other
    records) go after the first record."""
    ids = list(dict.fromkeys(flow["instrument_id"].tolist())) if mappings else []
    body = _records_bytes(flow, encoder)
    data = metadata_bytes(version, ids, symbols, start_ns) + body[:56] + extra + body[56:]
    if zstd:
        import zstandard
        data = zstandard.ZstdCompressor(level=3).compress(data)
    with open(path, "wb") as f:
        f.write(data)
