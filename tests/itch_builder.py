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
    def system(self, code: str = "O", ts: int | None = None) -> int:
        return self.message("S", 0, code.encode("ascii"), ts)

    def directory(self, locate: int, stock: str, ts: int | None = None) -> int:
        self.names[locate] = _stock(stock)
        body = (_stock(stock) + b"QN" + struct.pack(">I", 100) + b"NCZ PN 1N"
                + struct.pack(">I", 0) + b"N")
        return self.message("R", locate, body, ts)

    def trading_action(self, locate: int, state: str = "T", stock=None, ts: int | None = None) -> int:
        body = self.stock_of(locate, stock) + state.encode("ascii") + b" " + b"    "
        return self.message("H", locate, body, ts)

    def add(self, locate: int, ref: int, side, shares: int, price: int, mpid: str | None = None,
            stock=None, ts: int | None = None) -> int:
        """``A`` add order, or ``F`` when ``mpid`` is given."""
        body = (struct.pack(">Q", ref) + _side(side) + struct.pack(">I", shares)
                + self.stock_of(locate, stock) + struct.pack(">I", price))
        if mpid is None:
            return self.message("A", locate, body, ts)
        return self.message("F", locate, body + mpid.encode("ascii").ljust(4)[:4], ts)

    def execute(self, locate: int, ref: int, shares: int, match: int = 0, ts: int | None = None) -> int:
        return self.message("E", locate, struct.pack(">QIQ", ref, shares, match), ts)

    def execute_price(self, locate: int, ref: int, shares: int, price: int, match: int = 0,
                      printable: str = "Y", ts: int | None = None) -> int:
        body = struct.pack(">QIQ", ref, shares, match) + printable.encode("ascii") + struct.pack(">I", price)
        return self.message("C", locate, body, ts)

    def cancel(self, locate: int, ref: int, shares: int, ts: int | None = None) -> int:
        return self.message("X", locate, struct.pack(">QI", ref, shares), ts)

    def delete(self, locate: int, ref: int, ts: int | None = None) -> int:
        return self.message("D", locate, struct.pack(">Q", ref), ts)

    def replace(self, locate: int, ref: int, new_ref: int, shares: int, price: int,
                ts: int | None = None) -> int:
        return self.message("U", locate, struct.pack(">QQII", ref, new_ref, shares, price), ts)

    def trade(self, locate: int, ref: int, side, shares: int, price: int, match: int = 0,
              stock=None, ts: int | None = None) -> int:
        """``P`` non-cross trade (fields in the order of ``add``); no book change."""
        body = (struct.pack(">Q", ref) + _side(side) + struct.pack(">I", shares)
                + self.stock_of(locate, stock) + struct.pack(">IQ", price, match))
        return self.message("P", locate, body, ts)

    def cross(self, locate: int, shares: int, price: int, match: int = 0, cross_type: str = "O",
              stock=None, ts: int | None = None) -> int:
        body = (struct.pack(">Q", shares) + self.stock_of(locate, stock)
                + struct.pack(">IQ", price, match) + cross_type.encode("ascii"))
        return self.message("Q", locate, body, ts)

    def broken(self, match: int, locate: int = 0, ts: int | None = None) -> int:
        return self.message("B", locate, struct.pack(">Q", match), ts)

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
