"""What a backtested strategy sends and sees: orders, order updates and its context.

A strategy returns a list of :class:`Order` rows: the live path's OUCH order
(obook.live.ouch.Order: ``kind`` "enter", "replace" or "cancel", ``symbol``, ``side`` "B"/"S"
(or "buy"/"sell", any case; OUCH's short sales "T" and "E" sell), ``qty``, ``price``,
``ref``, ``orig``, ``tif``) with two more fields, ``market`` and ``post_only``; ``kind``
may also be "new" (= enter) or "modify" (= replace). ``tif``: "GTC", "DAY", "IOC", "FOK"
or OUCH's byte codes (b"0" day, b"3" IOC, b"\\x99"... any other byte code is DAY).
``market`` and ``post_only`` are True or False; an empty ``symbol`` is the instrument of
the call. A live strategy's plain OUCH orders work as they are. Quantities and prices are
whole numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._kernels.simulate_layout import OP_CANCEL, OP_MODIFY, OP_NEW, TIF_DAY, TIF_FOK, TIF_GTC, TIF_IOC
from ..errors import ObookError
from ..live.ouch import Order as OuchOrder
from ..live.strategy import Top

ACTIONS = {"enter": OP_NEW, "new": OP_NEW, "replace": OP_MODIFY, "modify": OP_MODIFY, "cancel": OP_CANCEL}
TIFS = {"GTC": TIF_GTC, "DAY": TIF_DAY, "IOC": TIF_IOC, "FOK": TIF_FOK, b"0": TIF_DAY, b"3": TIF_IOC}
EVENT_NAMES = ("", "accepted", "rejected", "rested", "partially_filled", "filled", "cancelled", "expired",
               "modified", "queue")


@dataclass(frozen=True)
class Order(OuchOrder):
    """An order instruction (see the module doc)."""

    market: bool = False
    post_only: bool = False


def action_of(order) -> int:
    try:
        return ACTIONS[order.kind]
    except KeyError:
        raise ObookError(f"order kind {order.kind!r}: use enter/new, replace/modify or cancel") from None


#: OUCH's short sales, "T" (short) and "E" (short exempt), are sells
SIDES = {"B": 0, "BUY": 0, "S": 1, "SELL": 1, "T": 1, "E": 1}


def side_of(order) -> int:
    """0 (buy) or 1 (sell) of an order's side: "B" / "buy" or "S" / "sell", any case; OUCH's
    short sales "T" and "E" sell."""
    side = order.side
    try:
        return SIDES[(side.decode() if isinstance(side, bytes) else side).upper()]
    except (KeyError, AttributeError, UnicodeDecodeError):
        raise ObookError(f"order side {side!r}: use B / buy or S / sell (T / E: a short sale)") from None


def market_price(side: int, bid, ask) -> int:
    """The price a market order of ``side`` (0 buy) is checked at by the risk gate: the other
    side's best, else its own side's, else 0 (as the compiled gate reads it)."""
    other, own = (ask, bid) if side == 0 else (bid, ask)
    return other if other is not None else own if own is not None else 0


def as_checked(order, side: int, qty: int, price: int):
    """The order as the risk gate reads it: its side "B" or "S", its quantity and price as
    Python integers (``price``: a market order's the price it would take), so that the gate
    compares and multiplies exact numbers."""
    change = {} if order.side == "BS"[side] else {"side": "BS"[side]}
    if type(order.qty) is not int or order.qty != qty:
        change["qty"] = qty
    if type(order.price) is not int or order.price != price:
        change["price"] = price
    if not change:
        return order
    import dataclasses

    return dataclasses.replace(order, **change)


def order_numbers(order, act: int, market: bool) -> tuple[int, int, int, int]:
    """An order's (quantity, price, ref, orig) as 64-bit integers, read before the risk gate:
    what is no whole number (text, NaN, a fraction) or beyond 64 bits, or a limit price
    below 0, is an error naming it (it never reaches the gate or the venue). A market
    order's price is -1."""
    qty = whole(order.qty, "quantity")
    price = -1 if market else whole(order.price, "price")
    if price < 0 and not market and act != OP_CANCEL:
        raise ObookError(f"price {price} is below 0 (a limit price is a whole number of the feed's price units "
                         "from 0; market=True sends a market order)")
    return qty, price, whole(order.ref, "ref"), whole(order.orig or 0, "orig")


def named_ref(act: int, ref: int, orig: int) -> int:
    """The ref an order names: a replace's ``orig`` (when not 0), else its ``ref`` (a new
    order's own, the order a cancel ends)."""
    return orig if act == OP_MODIFY and orig else ref


ORDER_FIELDS = ("kind", "symbol", "side", "qty", "price", "ref")


def call_name(strategy, method: str | None) -> str:
    """A strategy's call as its errors name it: ``JoinAsk.on_book`` (a method), or a callable
    strategy's name and ``(top)``: ``JoinBid(top)`` (method None)."""
    name = getattr(strategy, "__name__", None) or type(strategy).__name__
    return f"{name}.{method}" if method else f"{name}(top)"


def listed(orders):
    """What a strategy returned, its orders read: the items of a generator (or of another
    iterable that is no list or tuple) as a list, so that the strategy's own code that runs
    as they are read runs in its call (an exception there is the strategy's); None, a list, a
    tuple and what is no list of orders (text, a dict, an order, a number) as they are, for
    send_each to send or refuse."""
    if orders is None or type(orders) in (list, tuple) or isinstance(orders, (str, bytes, dict, OuchOrder)):
        return orders
    try:
        items = iter(orders)
    except TypeError:
        return orders
    return list(items)


def send_each(orders, send, now: int, error, strategy, method: str | None) -> None:
    """``send(order)`` for each order the ``strategy``'s ``method`` (call_name) returned (None
    or [] for none); what is no list of orders, or an order that cannot be read, raises
    ``error`` (StrategyError) naming the call and it (the name made only then: this runs at
    every call of a Python strategy)."""
    if orders is None:
        return
    if isinstance(orders, (str, bytes, dict, OuchOrder)):   # iterable, yet no list of orders
        items = None
    else:
        try:
            items = list(orders)
        except TypeError:
            items = None
    if items is None:
        raise error(f"the strategy {call_name(strategy, method)} returned {shown(orders)}, not a list of orders (at time {now})")
    for o in items:
        try:
            if not all(hasattr(o, a) for a in ORDER_FIELDS):
                raise ObookError("no order (obook.backtest.orders.Order)")
            send(o)
        except error:
            raise
        except (ObookError, TypeError, ValueError, AttributeError, OverflowError) as e:
            raise error(f"the strategy {call_name(strategy, method)} sent an order it cannot send: {shown(o)}: {e} (at time {now})") from e


def shown(value) -> str:
    """``repr(value)``, cut to 200 characters (an error message's quote of what it got)."""
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def tif_of(order) -> int:
    """An order's time in force: GTC, DAY, IOC, FOK (any case), or OUCH's byte codes (b"3":
    IOC, any other: DAY); other text, or what is neither text nor bytes (a number, None), is
    an error."""
    tif = getattr(order, "tif", "DAY")
    if isinstance(tif, str):
        tif = tif.upper()
        if tif not in TIFS:
            raise ObookError(f"time in force {tif!r}: use GTC, DAY, IOC or FOK")
    elif not isinstance(tif, bytes):
        raise ObookError(f"time in force {shown(tif)}: use GTC, DAY, IOC or FOK (or OUCH's byte codes, b\"0\" DAY, "
                         "b\"3\" IOC)")
    return TIFS.get(tif, TIF_DAY)


def flags_of(order) -> tuple[int, int]:
    """An order's (market, post_only) as 0 or 1: each True or False (1 or 0 too); what else
    it is (text such as "no", None) is an error, never read as true or false."""
    return _flag(order, "market"), _flag(order, "post_only")


def _flag(order, name: str) -> int:
    value = getattr(order, name, False)
    try:
        ok = not isinstance(value, (str, bytes)) and value in (0, 1)
    except (TypeError, ValueError):         # (an array: no single truth)
        ok = False
    if not ok:
        raise ObookError(f"{name} {shown(value)}: give True or False")
    return int(bool(value))


INT64_MAX = (1 << 63) - 1


def whole(value, what: str) -> int:
    """An order's quantity, price or ref as a 64-bit integer; a fraction, what is no number
    (text, NaN, a bool) or beyond 64 bits is an error, never truncated or wrapped."""
    from ..checks import is_whole

    if isinstance(value, float) and not math.isfinite(value):
        raise ObookError(f"{what} {value!r} is NaN or infinite, no whole number")
    if not is_whole(value):
        raise ObookError(f"{what} {value!r} is no whole number (prices and quantities are integers in the "
                         "feed's units)")
    n = int(value)
    if not -INT64_MAX <= n <= INT64_MAX:
        raise ObookError(f"{what} {n} is beyond 64 bits (at most {INT64_MAX})")
    return n


@dataclass(slots=True)
class OrderUpdate:
    """An order's event as it reaches the strategy (after the response latency).
    ``event``: accepted, rejected, rested, partially_filled, filled, cancelled, expired,
    modified; ``fill_price`` / ``liquidity`` for fills; ``time``: when the venue did it."""

    ref: int
    event: str
    reason: int
    price: int
    qty: int
    remaining: int
    fill_price: int | None
    liquidity: str | None
    time: int


@dataclass(slots=True)
class OpenOrder:
    ref: int
    symbol: str
    side: str
    price: int
    remaining: int
    filled: int
    pending: bool          # sent, not acknowledged yet


@dataclass(slots=True)
class BacktestTop(Top):
    """The live path's :class:`~obook.live.strategy.Top` (so a live strategy runs as it is)
    with the backtest's context: ``view`` (:class:`Context`)."""

    view: object = None
