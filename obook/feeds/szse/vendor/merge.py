"""The vendor CSV files of a Shenzhen day merged into one text log stream (see the package)."""

from __future__ import annotations

import csv
import heapq
import io
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from ....errors import FeedError, ObookError
from ...sources import open_source


def _scaled(text: str, digits: int, path: str, line: int, field: str) -> int:
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        raise FeedError(path, line, f"{field} is not a decimal number: '{text}'", unit="line") from None
    v = d.scaleb(digits)
    if v != v.to_integral_value():
        raise FeedError(path, line, f"{field} has more than {digits} decimals: '{text}'", unit="line")
    return int(v)


def _code(text: str) -> int:
    return ord(text.strip()[:1] or "\0")


def _rows(path: str):
    """(key, text log line) of one file, in file order."""
    m = re.match(r"(\d{1,6})", Path(path).name)
    if not m:
        raise ObookError(f"{path}: the file name must start with the security id (000001_orders.csv)")
    sec = f"{int(m.group(1)):06d}"
    with open_source(path) as f:
        text = io.TextIOWrapper(_Raw(f), encoding="utf-8", newline="")
        reader = csv.reader(text)
        header = next(reader, [])
        ticks = "BidApplSeqNum" in header
        for n, row in enumerate(reader, start=2):
            if not row:
                continue
            try:
                if ticks:
                    appl, bid, offer, px, qty, ex, t, ch = row[:8]
                    line = (f"//SecurityIDSource=102 MsgType=191 SecurityID={sec} ChannelNo={int(ch)} "
                            f"ApplSeqNum={int(appl)} BidApplSeqNum={int(bid)} OfferApplSeqNum={int(offer)} "
                            f"LastPx={_scaled(px, 4, path, n, 'Price')} "
                            f"LastQty={_scaled(qty, 2, path, n, 'Qty')} ExecType={_code(ex)} TransactTime={int(t)}")
                else:
                    appl, side, typ, px, qty, t, ch = row[:7]
                    line = (f"//SecurityIDSource=102 MsgType=192 SecurityID={sec} ChannelNo={int(ch)} "
                            f"ApplSeqNum={int(appl)} Price={_scaled(px, 4, path, n, 'Price')} "
                            f"OrderQty={_scaled(qty, 2, path, n, 'OrderQty')} Side={_code(side)} "
                            f"OrdType={_code(typ)} TransactTime={int(t)}")
            except ValueError as e:
                raise FeedError(path, n, f"malformed row: {e}", unit="line") from None
            yield (int(t), int(ch), int(appl)), line


class _Raw(io.RawIOBase):
    def __init__(self, reader):
        self.reader = reader

    def readable(self):
        return True

    def readinto(self, b):
        return self.reader.readinto(memoryview(b))


class MergedReader:
    """A Reader of the merged text log (readinto, pos, a context manager)."""

    def __init__(self, paths):
        self._lines = (line for _, line in heapq.merge(*(_rows(p) for p in paths), key=lambda r: r[0]))
        self._buf = b""
        self._pos = 0

    def readinto(self, view) -> int:
        while len(self._buf) < len(view):
            chunk = "\n".join(line for _, line in zip(range(4096), self._lines))
            if not chunk:
                break
            self._buf += (chunk + "\n").encode()
        n = min(len(view), len(self._buf))
        view[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        self._pos += n
        return n

    def pos(self) -> int:
        return self._pos

    def close(self) -> None:
        self._lines.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def paired(source):
    """``source`` (a path or a list of them) once every security in it has both its orders
    file and its ticks file: one without the other replays nothing (a ticks file names the
    orders the orders file adds; an orders file alone never trades), so it is an error
    naming the file that is missing."""
    paths = [source] if isinstance(source, (str, Path)) else list(source)
    kinds: dict[str, dict[str, str]] = {}
    for p in paths:
        m = re.match(r"(\d{1,6})", Path(p).name)
        if not m:
            raise ObookError(f"{p}: the file name must start with the security id (000001_orders.csv)")
        from ...sources import read_head

        head = read_head(str(p), 256)
        kind = "ticks" if head.startswith(b"ApplSeqNum,BidApplSeqNum") else "orders"
        kinds.setdefault(f"{int(m.group(1)):06d}", {})[kind] = str(p)
    for sec, have in kinds.items():
        for kind, other in (("orders", "ticks"), ("ticks", "orders")):
            if kind in have and other not in have:
                missing = Path(have[kind]).with_name(f"{sec}_{other}.csv")
                raise ObookError(f"{have[kind]}: a Shenzhen vendor {kind} file is read with its {other} file "
                                 f"(e.g. {missing}); give both")
    return [str(p) for p in paths]


def merge(paths) -> MergedReader:
    return MergedReader([str(p) for p in paths])
