"""Hand-built Nasdaq ITCH 5.0 feeds (BinaryFILE framing) for tests.

    b = ItchBuilder()
    b.directory(1, "AAPL")
    b.add(1, ref=10, side="B", shares=100, price=1_000_000)
    b.execute(1, ref=10, shares=40)
    path = b.write(tmp_path / "day.itch")

Every method appends one frame and returns the builder's 1-based message number
of that frame (its ``seq``). Timestamps increase by ``step`` ns per message
unless ``ts=`` is given. Prices are raw ITCH integers (1/10000 $).
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

from obook._kernels.itch_layout import pack

T_OPEN = 34_200 * 10**9


def _stock(name: str | bytes) -> bytes:
    raw = name.encode("ascii") if isinstance(name, str) else bytes(name)
    return raw.ljust(8)[:8]


def _side(side) -> bytes:
    side = side.encode("ascii") if isinstance(side, str) else bytes([side]) if isinstance(side, int) else side
    if side not in (b"B", b"S"):
        raise ValueError(f"side must be 'B' or 'S', not {side!r}")
    return side


class ItchBuilder:
    def __init__(self, start_ts: int = T_OPEN, step: int = 1000, tracking: int = 0):
        self.frames: list[bytes] = []
        self.ts = start_ts
        self.step = step
        self.tracking = tracking
        self.names: dict[int, bytes] = {}

    # ------------------------------------------------------------ plumbing
    def frame(self, data: bytes) -> int:
        """Append an arbitrary frame (its 2-byte length is added here)."""
        self.frames.append(struct.pack(">H", len(data)) + bytes(data))
        return len(self.frames)

    def message(self, typ, locate: int, body: bytes, ts: int | None = None) -> int:
        """Append a message: type, locate, tracking, timestamp, then ``body``."""
        typ = typ.encode("ascii") if isinstance(typ, str) else bytes([typ]) if isinstance(typ, int) else typ
        if ts is None:
            self.ts += self.step
            ts = self.ts
        else:
            self.ts = ts
        head = typ + struct.pack(">HH", locate, self.tracking) + ts.to_bytes(6, "big")
        return self.frame(head + body)

    def raw(self, typ, length: int, locate: int = 0, ts: int | None = None) -> int:
        """A frame of ``length`` bytes of type ``typ`` (zero filled after the header).

        Use it for unknown types, or for short (malformed) frames of known types:
        a length under 11 cuts into the common header itself.
        """
        typ = typ.encode("ascii") if isinstance(typ, str) else bytes([typ]) if isinstance(typ, int) else typ
        if length >= 11:
            return self.message(typ, locate, bytes(length - 11), ts)
        full = typ + struct.pack(">HH", locate, self.tracking) + (ts or self.ts).to_bytes(6, "big")
        return self.frame(full[:length])

    def stock_of(self, locate: int, stock=None) -> bytes:
        return _stock(stock) if stock is not None else self.names.get(locate, _stock("TEST"))

    # ------------------------------------------------------------ messages
    # laid out by the one ITCH layout (obook._kernels.itch_layout.pack)
    def fields(self, typ: str, locate: int, ts: int | None = None, **values) -> int:
        """Append a message of a layout type with the named fields (the rest zero)."""
        if ts is None:
            self.ts += self.step
            ts = self.ts
        else:
            self.ts = ts
        return self.frame(pack(typ, locate, self.tracking, ts, **values))

    def system(self, code: str = "O", ts: int | None = None) -> int:
        return self.fields("S", 0, ts, event_code=code)

    def directory(self, locate: int, stock: str, ts: int | None = None) -> int:
        self.names[locate] = _stock(stock)
        return self.fields("R", locate, ts, stock=_stock(stock), market_category="Q", financial_status="N",
                           round_lot_size=100, round_lots_only="N", issue_classification="C",
                           issue_subtype="Z", authenticity="P", short_sale_threshold="N", ipo_flag=" ",
                           luld_tier="1", etp_flag="N", etp_leverage_factor=0, inverse="N")

    def trading_action(self, locate: int, state: str = "T", stock=None, ts: int | None = None) -> int:
        return self.fields("H", locate, ts, stock=self.stock_of(locate, stock), state=state,
                           reserved=" ", reason="")

    def add(self, locate: int, ref: int, side, shares: int, price: int, mpid: str | None = None,
            stock=None, ts: int | None = None) -> int:
        """``A`` add order, or ``F`` when ``mpid`` is given."""
        values = dict(ref=ref, side=_side(side), shares=shares, stock=self.stock_of(locate, stock),
                      price=price)
        if mpid is None:
            return self.fields("A", locate, ts, **values)
        return self.fields("F", locate, ts, mpid=mpid, **values)

    def execute(self, locate: int, ref: int, shares: int, match: int = 0, ts: int | None = None) -> int:
        return self.fields("E", locate, ts, ref=ref, shares=shares, match=match)

    def execute_price(self, locate: int, ref: int, shares: int, price: int, match: int = 0,
                      printable: str = "Y", ts: int | None = None) -> int:
        return self.fields("C", locate, ts, ref=ref, shares=shares, match=match, printable=printable,
                           price=price)

    def cancel(self, locate: int, ref: int, shares: int, ts: int | None = None) -> int:
        return self.fields("X", locate, ts, ref=ref, shares=shares)

    def delete(self, locate: int, ref: int, ts: int | None = None) -> int:
        return self.fields("D", locate, ts, ref=ref)

    def replace(self, locate: int, ref: int, new_ref: int, shares: int, price: int,
                ts: int | None = None) -> int:
        return self.fields("U", locate, ts, ref=ref, new_ref=new_ref, shares=shares, price=price)

    def trade(self, locate: int, ref: int, side, shares: int, price: int, match: int = 0,
              stock=None, ts: int | None = None) -> int:
        """``P`` non-cross trade (fields in the order of ``add``); no book change."""
        return self.fields("P", locate, ts, ref=ref, side=_side(side), shares=shares,
                           stock=self.stock_of(locate, stock), price=price, match=match)

    def cross(self, locate: int, shares: int, price: int, match: int = 0, cross_type: str = "O",
              stock=None, ts: int | None = None) -> int:
        return self.fields("Q", locate, ts, shares=shares, stock=self.stock_of(locate, stock), price=price,
                           match=match, cross_type=cross_type)

    def broken(self, match: int, locate: int = 0, ts: int | None = None) -> int:
        return self.fields("B", locate, ts, match=match)

    # ------------------------------------------------------------ output
    def __len__(self) -> int:
        return len(self.frames)

    def bytes(self) -> bytes:
        return b"".join(self.frames)

    def write(self, path, gz: bool = False, tail: bytes = b"") -> Path:
        """Write the feed (gzipped with ``gz``), plus ``tail`` raw bytes (e.g. a cut message)."""
        path = Path(path)
        data = self.bytes() + tail
        if gz:
            with open(path, "wb") as raw, \
                    gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
                f.write(data)
        else:
            path.write_bytes(data)
        return path
