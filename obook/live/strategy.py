"""Tick to trade: a strategy hook called on every BBO change of the instruments it
subscribes to, the risk gate, and the order gateway, with a stamp at each step.

A strategy is a Python callable ``strategy(top) -> iterable of Order | None``; ``top`` is a
:class:`Top` (the book top after the change, the feed time, and the live stamps). A numba
function can be wrapped with :func:`numba_strategy` (:mod:`obook.live.fast_strategy`): the
same object then also runs inside the compiled live loop. The same :class:`TickToTrade` runs
behind a live listener and behind a file replay (:func:`replay_orders`), so both send the
same orders for the same day: the strategy sees the same rows in the same order, the risk
gate's rate window runs on the feed's clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import ObookError, StrategyError
from .latency import Histogram, now
from .fast_strategy import NumbaStrategy, fresh, numba_strategy  # noqa: F401  (the public names)
from .ouch import Order
from .risk import RiskGate

_TOP = ("seq", "time", "ticker", "locate", "bid_px", "bid_qty", "ask_px", "ask_qty")


@dataclass(slots=True)
class Top:
    seq: int
    time: int
    ticker: str
    locate: int
    bid_px: int | None
    bid_qty: int | None
    ask_px: int | None
    ask_qty: int | None
    stamps: dict | None = None    # live: recv (kernel), decoded, handover, book (monotonic ns)


def check_live_strategy(strategy, what: str) -> None:
    """An ObookError, ``what`` (the strategy as given) first, for what the live path cannot
    call as ``strategy(top)``: a backtest's object (``on_book`` ... and no ``__call__``), a
    numba function not wrapped by :func:`numba_strategy`, anything else not callable."""
    if isinstance(strategy, NumbaStrategy):
        return
    if hasattr(strategy, "py_func"):
        why = "a numba function not wrapped by numba_strategy"
    elif callable(strategy):
        return
    else:
        hooks = [m for m in ("on_book", "on_order", "on_timer") if hasattr(strategy, m)]
        from ..checks import a_or_an

        kind = a_or_an(type(strategy).__name__)
        why = (f"{kind} with {', '.join(hooks)} but no __call__ (a backtest's strategy: obook backtest runs it)"
               if hooks else f"{kind}, not callable")
    raise ObookError(f"{what} is no live strategy: {why}; give a callable(top) -> list of obook.live.ouch.Order "
                     "or None, or obook.live.strategy.numba_strategy(fn, state=...)")


def _where(top: Top) -> str:
    return f"on message {top.seq} ({top.ticker})"


def raised(e: BaseException) -> str:
    """What a strategy raised, in words: ``sys.exit()`` in it is an error like any other (a
    SIGTERM's SystemExit, which the command raised, is raised again as it is)."""
    from .. import interrupts

    if isinstance(e, SystemExit):
        if interrupts.raised is not None:
            raise e
        return f"it called sys.exit({e.code!r})"
    return f"{type(e).__name__}: {e}"


def call_strategy(strategy, top: Top) -> list:
    """``strategy(top)``'s orders as a list (None: none); what it raises (``sys.exit()``
    too), or returns that is no iterable of :class:`Order`, is a StrategyError naming where
    (its file and line)."""
    try:
        orders = strategy(top)
    except StrategyError:
        raise
    except (Exception, SystemExit) as e:      # the user's code: whatever it raises
        import traceback

        what = raised(e)
        frames = traceback.extract_tb(e.__traceback__)
        at = f" at {frames[-1].filename}:{frames[-1].lineno}" if len(frames) > 1 else ""
        raise StrategyError(f"strategy {_where(top)}: {what}{at}") from e
    if orders is None:
        return []
    try:
        orders = list(orders)
    except TypeError:
        raise StrategyError(f"strategy {_where(top)}: returned {type(orders).__name__}, not a list of "
                            "obook.live.ouch.Order (or None)") from None
    for o in orders:
        if not isinstance(o, Order):
            raise StrategyError(f"strategy {_where(top)}: returned a {type(o).__name__} among its orders, not an "
                                "obook.live.ouch.Order")
    return orders


def bad_order(order: Order, top: Top, e: Exception) -> StrategyError:
    """The StrategyError of an order the risk gate or OUCH cannot take (``e``: why; a field
    OUCH cannot carry is named as :func:`~obook.live.ouch.check` names it, rather than by the
    comparison of the risk gate it broke)."""
    from .ouch import check

    try:
        check(order)
    except ObookError as refused:
        e = refused
    return StrategyError(f"strategy {_where(top)}: cannot send {order}: {e}")


def encoded(order: Order, top: Top) -> bytes:
    """The OUCH message of a strategy's ``order``; a StrategyError when a field cannot be
    sent (a side of two letters, a negative price, a kind OUCH has not ...)."""
    import struct

    from .ouch import encode

    try:
        return encode(order)
    except (struct.error, AttributeError, TypeError, ValueError, ObookError) as e:
        raise bad_order(order, top, e) from e


class TickToTrade:
    """Strategy → risk gate → gateway. ``tickers``: the subscribed instruments (None: all).
    ``gateway``: a :class:`~obook.live.gateway.Gateway` or None (orders are only kept).
    ``orders``: every order that passed the risk gate, in order; ``digest()`` hashes them."""

    def __init__(self, strategy, tickers=None, risk: RiskGate | None = None, gateway=None):
        check_live_strategy(strategy, f"strategy {repr(strategy)[:80]}")
        self.strategy = fresh(strategy)      # a compiled strategy starts from its initial state
        if isinstance(tickers, str):
            tickers = tickers.split(",")
        self.tickers = None if tickers is None else {str(t).strip() for t in tickers if str(t).strip()}
        self.risk = risk or RiskGate()
        self.gateway = gateway
        self.orders: list[Order] = []
        self.calls = 0
        self.hists = {k: Histogram(k) for k in ("strategy", "risk", "gateway")}
        self._kernel_of: dict[int, int] = {}

    def on_bbo(self, batch: pa.RecordBatch, feed=None, t_book: int | None = None) -> None:
        """Run the strategy over a batch of BBO rows (``feed``: the LiveFeed whose stamps the
        rows' records carry; ``t_book``: when the batch left the book)."""
        try:
            self._run(batch, feed, t_book)
        finally:
            if self.gateway is not None:
                self.gateway.poll()     # the venue's answers; a heartbeat when idle

    def _run(self, batch: pa.RecordBatch, feed, t_book) -> None:
        if self.tickers is not None:   # (a set lookup a row: pyarrow's is_in + filter cost ~50x more here)
            keep = [i for i, t in enumerate(batch.column("ticker").to_pylist()) if t in self.tickers]
            if len(keep) < batch.num_rows:
                batch = batch.take(pa.array(keep, pa.int64()))
        if not batch.num_rows:
            return
        cols = {k: batch.column(k).to_pylist() for k in _TOP}
        strat, risk, sent = [], [], []     # stage times, counted after the batch (off the path)
        gw = self.gateway
        for i in range(batch.num_rows):
            seq = cols["seq"][i]
            stamps = None
            if feed is not None:
                r = seq & feed.mask
                stamps = {"recv": int(feed.t_kernel[r]), "decoded": int(feed.t_decode[r]),
                          "handover": int(feed.t_handover[r]), "book": t_book}
            top = Top(seq, cols["time"][i], cols["ticker"][i], cols["locate"][i], cols["bid_px"][i],
                      cols["bid_qty"][i], cols["ask_px"][i], cols["ask_qty"][i], stamps)
            self.calls += 1
            orders = call_strategy(self.strategy, top)
            t1 = now()
            if t_book is not None:
                strat.append(t1 - t_book)
            for o in orders:
                try:
                    reason = self.risk.check(o, top.bid_px, top.ask_px, top.time)
                except (TypeError, ValueError) as e:        # a field of the wrong type
                    raise bad_order(o, top, e) from e
                t2 = now()
                risk.append(t2 - t1)
                if reason is None:
                    msg = encoded(o, top)       # an order OUCH cannot carry stops here, named
                    self.orders.append(o)
                    if gw is not None:
                        t3 = gw.send(o, msg)
                        sent.append(t3 - t2)
                        if stamps is not None:
                            self._kernel_of.setdefault(o.ref, stamps["recv"])
                t1 = now()
        for name, values in (("strategy", strat), ("risk", risk), ("gateway", sent)):
            self.hists[name].record(values)

    def digest(self) -> str:
        import hashlib

        from .ouch import encode

        return hashlib.sha256(b"".join(encode(o) for o in self.orders)).hexdigest()

    def venue_hists(self) -> list[Histogram]:
        """gateway sent → venue received, and tick to trade (kernel receive of the message
        that caused the order → venue received), from the venue's answers."""
        venue, t2t = Histogram("venue"), Histogram("tick-to-trade")
        gw = self.gateway
        if gw is None:
            return [venue, t2t]
        refs = [r for r in gw.venue_ns if r in gw.sent_ns]
        venue.record(np.array([gw.venue_ns[r] - gw.sent_ns[r] for r in refs], np.int64))
        t2t.record(np.array([gw.venue_ns[r] - self._kernel_of[r] for r in refs if r in self._kernel_of], np.int64))
        return [venue, t2t]


def warn_tickers_missing(missing) -> None:
    """Log the subscribed tickers the ended session's stock directory never named."""
    if missing:
        import logging

        logging.getLogger("obook").warning("tickers %s: not in the session's stock directory: the strategy was "
                                           "never called for them", ", ".join(missing))


def replay_orders(path, strategy, tickers=None, risk: RiskGate | None = None, gateway=None,
                  format: str = "itch", on_error: str = "raise") -> TickToTrade:
    """The same strategy, risk gate and gateway behind a file replay (offline). A feed of
    another format than ``format`` is an ObookError naming both, before any order."""
    from ..engine.replay import Replay
    from ..feeds import require_format

    require_format(path, format, f"replay_orders reads it as {format} (format={format!r}): pass its format")
    ttt = TickToTrade(strategy, tickers, risk, gateway)
    replay = Replay(path, workers=1, format=format, on_error=on_error)
    for batch in replay.batches():
        ttt.on_bbo(batch)
    return ttt
