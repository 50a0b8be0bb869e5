"""OUCH 5.0 order entry messages (inbound: Enter 'O', Replace 'U', Cancel 'X'; outbound:
Accepted 'A', Replaced 'U', Canceled 'C', Rejected 'J'), big-endian, prices u64 with 4 implied decimals.
They ride in SoupBinTCP 'U' (client → venue) and 'S' (venue → client) packets.

Outbound messages carry the venue's Timestamp; the simulated venue puts its receive stamp
(monotonic ns, the live path's one clock) there, which the gateway reads back as the
"venue received" stage.
"""

from __future__ import annotations

import operator
import struct
from dataclasses import dataclass

from ..checks import not_int
from ..errors import ObookError

# Enter Order: type, UserRefNum, Side, Quantity, Symbol, Price, TimeInForce, Display,
# Capacity, InterMarketSweepEligibility, CrossType, ClOrdID, AppendageLength
ENTER = struct.Struct(">cIcI8sQccccc14sH")
# Replace Order: type, OrigUserRefNum, UserRefNum, Quantity, Price, TimeInForce, Display,
# InterMarketSweepEligibility, ClOrdID, AppendageLength
REPLACE = struct.Struct(">cIIIQccc14sH")
# Cancel Order: type, UserRefNum, Quantity
CANCEL = struct.Struct(">cII")
# Order Accepted: type, Timestamp, UserRefNum, Side, Quantity, Symbol, Price, TimeInForce,
# Display, OrderReferenceNumber, Capacity, InterMarketSweepEligibility, CrossType,
# OrderState, ClOrdID, AppendageLength
ACCEPTED = struct.Struct(">cQIcI8sQccQcccc14sH")
# Order Replaced: type, Timestamp, OrigUserRefNum, UserRefNum, Side, Quantity, Symbol,
# Price, TimeInForce, Display, OrderReferenceNumber, Capacity, InterMarketSweepEligibility,
# CrossType, OrderState, ClOrdID, AppendageLength
REPLACED = struct.Struct(">cQIIcI8sQccQcccc14sH")
# Order Canceled: type, Timestamp, UserRefNum, Quantity (the shares taken off), Reason
CANCELED = struct.Struct(">cQIIc")
# Order Rejected: type, Timestamp, UserRefNum, Reason, ClOrdID
REJECTED = struct.Struct(">cQIH14s")

# Order Rejected reasons (OUCH 5.0's codes)
INVALID_SIDE, OTHER, INVALID_QUANTITY, INVALID_SYMBOL, INVALID_PRICE = 0x0009, 0x000F, 0x0013, 0x0017, 0x001D
#: the words of the Order Rejected reasons above
REASON_WORDS = {INVALID_SIDE: "invalid side", OTHER: "other reason", INVALID_QUANTITY: "invalid quantity",
                INVALID_SYMBOL: "invalid symbol", INVALID_PRICE: "invalid price"}

SIZES = {b"O": ENTER.size, b"U": REPLACE.size, b"X": CANCEL.size}


@dataclass(frozen=True)
class Order:
    """An order instruction of a strategy: kind "enter", "replace" or "cancel".

    ``ref``: the UserRefNum (the strategy numbers its orders; a replace gives the order a
    new one); ``orig``: the order a replace replaces. ``side`` matters to the risk gate's
    band also for a replace (OUCH's Replace carries none). ``price`` in 1/10000 (the feed's ITCH scale); ``qty`` shares."""

    kind: str
    symbol: str = ""
    side: str = "B"
    qty: int = 0
    price: int = 0
    ref: int = 0
    orig: int = 0
    tif: bytes = b"0"        # '0' day


def _clordid(ref: int) -> bytes:
    return f"OB{ref:012d}".encode()


SIDES = ("B", "S", "T", "E")      # buy, sell, sell short, sell short exempt
_U32, _PRICE = 1 << 32, 1 << 63


def _field(name: str, value, low: int, high: int) -> None:
    try:
        whole = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        whole = None
    if whole is None or not low <= whole < high:
        raise ObookError(f"{name} {not_int(value)} is not an integer from {low} to {high - 1}")


def check(order: Order) -> None:
    """An ObookError for an order OUCH 5.0 cannot carry as it is (packing would refuse it with
    a bare message, or cut a long symbol short)."""
    if order.kind not in ("enter", "replace", "cancel"):
        raise ObookError(f"unknown order kind {order.kind!r} (enter, replace or cancel)")
    _field("ref", order.ref, 0, _U32)
    _field("qty", order.qty, 1 if order.kind == "enter" else 0, _U32)
    if order.kind == "cancel":
        return
    _field("price", order.price, 0, _PRICE)
    if not isinstance(order.tif, bytes) or len(order.tif) != 1:
        raise ObookError(f"tif {order.tif!r} is not one byte: OUCH's TimeInForce, b'0' (day) or b'3' (IOC)")
    if order.kind == "replace":
        _field("orig", order.orig, 0, _U32)
        return
    if order.side not in SIDES:
        raise ObookError(f"side {order.side!r} is not one of {', '.join(SIDES)}")
    sym = order.symbol
    if not isinstance(sym, str) or not 1 <= len(sym) <= 8 or not (sym.isascii() and sym.isprintable()):
        raise ObookError(f"symbol {sym!r} is not 1 to 8 ASCII characters")


def encode(order: Order) -> bytes:
    check(order)
    if order.kind == "enter":
        return ENTER.pack(b"O", order.ref, order.side.encode(), order.qty, order.symbol.encode().ljust(8),
                          order.price, order.tif, b"Y", b"A", b"N", b"N", _clordid(order.ref), 0)
    if order.kind == "replace":
        return REPLACE.pack(b"U", order.orig, order.ref, order.qty, order.price, order.tif, b"Y", b"N",
                            _clordid(order.ref), 0)
    return CANCEL.pack(b"X", order.ref, order.qty)


def decode(msg: bytes) -> Order:
    """An inbound message back to an Order (the venue's log)."""
    t, want = msg[:1], SIZES.get(msg[:1])
    if want != len(msg):
        raise ObookError(f"OUCH message of type {t!r} and {len(msg)} bytes ("
                         + (f"{want} expected)" if want else "Enter 'O', Replace 'U' or Cancel 'X' expected)"))
    if t == b"O":       # (latin-1: any byte decodes; check() says what OUCH cannot carry)
        _, ref, side, qty, sym, px, tif, *_ = ENTER.unpack(msg)
        return Order("enter", sym.decode("latin-1").rstrip(" "), side.decode("latin-1"), qty, px, ref, 0, tif)
    if t == b"U":
        _, orig, ref, qty, px, tif, *_ = REPLACE.unpack(msg)
        return Order("replace", "", "", qty, px, ref, orig, tif)
    _, ref, qty = CANCEL.unpack(msg)
    return Order("cancel", "", "", qty, 0, ref)


def reject_reason(o: Order) -> int | None:
    """The Order Rejected reason of a decoded Enter or Replace whose fields a venue refuses
    (what :func:`check` refuses, and a price of 0), or None."""
    if o.kind == "enter":
        if o.side not in SIDES:
            return INVALID_SIDE
        if not 1 <= len(o.symbol) <= 8 or not (o.symbol.isascii() and o.symbol.isprintable()):
            return INVALID_SYMBOL
        if o.qty == 0:
            return INVALID_QUANTITY
    if not 0 < o.price < _PRICE:
        return INVALID_PRICE
    return None


def accepted(o: Order, stamp: int, order_number: int) -> bytes:
    """Order Accepted of an Enter, stamped."""
    return ACCEPTED.pack(b"A", stamp, o.ref, o.side.encode(), o.qty, o.symbol.encode().ljust(8), o.price,
                         o.tif, b"Y", order_number, b"A", b"N", b"N", b"L", _clordid(o.ref), 0)


def replaced(o: Order, side: str, symbol: str, stamp: int, order_number: int) -> bytes:
    """Order Replaced of a Replace (``side`` and ``symbol``: the replaced order's), stamped."""
    return REPLACED.pack(b"U", stamp, o.orig, o.ref, side.encode(), o.qty, symbol.encode().ljust(8), o.price, o.tif,
                         b"Y", order_number, b"A", b"N", b"N", b"L", _clordid(o.ref), 0)


def canceled(ref: int, shares: int, stamp: int) -> bytes:
    """Order Canceled (``shares`` taken off at the user's request), stamped."""
    return CANCELED.pack(b"C", stamp, ref, shares, b"U")


def rejected(ref: int, reason: int, stamp: int) -> bytes:
    """Order Rejected of the message carrying UserRefNum ``ref``, stamped."""
    return REJECTED.pack(b"J", stamp, ref, reason, _clordid(ref))


def rejection_reason(msg: bytes) -> int:
    """The Reason code of an Order Rejected answer; an ObookError when it is too short to
    carry one."""
    if len(msg) < 15:
        raise ObookError(f"OUCH answer of type {msg[:1]!r} and {len(msg)} bytes (at least 15 expected)")
    return struct.unpack_from(">H", msg, 13)[0]


def reason_text(code: int) -> str:
    """An Order Rejected reason in words, its code after it: "invalid price (0x001D)"."""
    return f"{REASON_WORDS.get(code, 'reason')} (0x{code:04X})"


def response_stamp(msg: bytes) -> tuple[int, int]:
    """(venue timestamp, UserRefNum) of an outbound message; an ObookError when it is too
    short to carry them."""
    size = 17 if msg[:1] == b"U" else 13
    if len(msg) < size:
        raise ObookError(f"OUCH answer of type {msg[:1]!r} and {len(msg)} bytes (at least {size} expected)")
    stamp, a = struct.unpack_from(">QI", msg, 1)
    return stamp, (struct.unpack_from(">I", msg, 13)[0] if msg[:1] == b"U" else a)
