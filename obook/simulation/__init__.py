"""Your own orders inside a replayed day: queue position, fills and latency.

    >>> r = obook.simulate("12302019.NASDAQ_ITCH50.gz", "my_orders.csv", latency=250_000)
    >>> r.fills, r.events, r.summary, r.bbo, r.bbo_with_own     # pyarrow.Tables
    >>> obook.simulate(feed, orders, feed_tables=("depth",), own_tables=("depth_with_own",), levels=5)

The feed replays as usual (any registered format: ITCH, CSV, Databento MBO, Cboe PITCH,
Shenzhen, Shanghai; sharded by instrument over ``workers``, identical output for any number). Your
instructions have the columns of the matching engine's order entry
(:mod:`obook.feeds.orders`: time, instrument, order_id, action new/modify/cancel, side,
type limit/market, tif GTC/DAY/IOC/FOK, price, quantity); ``time`` is in the feed's time
unit (ITCH: ns since midnight, CSV: ms), ``instrument`` the feed's ticker, prices in the
feed's integer price units.

Semantics (what the simulation assumes; every row is exact, no queue model's guess):

* **Latency.** An instruction takes effect ``latency`` ns after its ``time``: a fixed
  integer, a column of the orders, or a seeded distribution (obook.simulate.prepare).
  It comes after every feed record of its book at or before that moment (same timestamp:
  the feed's record first) and before the next one. Cancels and modifies take the same path.
* **Passive orders** join the back of the queue at their price on arrival: the shares
  ahead are the feed's visible shares at that price and side then (less the shares your
  own crossing orders consumed there). Every feed order carries a priority stamp (its add;
  a replace or a modify that loses priority gives it a new one, i.e. moves it behind you).
  A cancel, delete or reduction of a feed order ahead of you moves you up by its shares;
  one behind you does nothing. An execution of an order ahead of you consumes the shares
  ahead. An execution of a feed order *behind* yours at your price, while your shares
  ahead are 0, fills yours first (up to the executed shares, oldest own order first): the
  venue gave those shares to that order, the simulation gives them to you; such fills carry
  ``priority_differs = true``. While shares remain ahead of you, executions of orders
  behind you fill nothing. A print that names a live feed order at its price announces that
  order's fill, and the cancel of those shares that follows is an execution (Databento MBO
  reports trades as F then C records); a delete the decoder marks as a fill (a CSV feed's
  ``F``: the order filled and left) is an execution of its shares. A feed order that arrives crossing your resting order (e.g. your
  bid above the feed's ask) fills your order at your price (maker, ``priority_differs``
  false), and those shares count as consumed at its level.
* **Crossing orders** take the visible liquidity on arrival, walking levels best first at
  each level's price. The shares taken are *consumed*: gone for your later orders until
  the feed replenishes the level (new shares at it are visible again; a feed execution
  at the level retires consumed shares first; a level never has more consumed shares than
  shares). Beyond that your orders have no market impact: the feed's own orders, its
  executions and its BBO are as recorded. Your orders never trade with each other.
* **Call auctions** (a format's ``continuous`` trading times: Shanghai and Shenzhen 09:30 to
  14:57): outside them the venue matches nothing continuously, so an own order arriving
  takes nothing and rests (IOC and market orders are cancelled unfilled, FOK rejected) and
  feed orders arriving fill none. The uncross's executions fill, at their trade price
  (maker, ``priority_differs``), the own orders of the executed order's side that the
  auction executed first: at a better price (best price, then oldest), or at its price and
  ahead of it while nothing is ahead of them; no more shares than those executions (own
  orders add no volume to the auction). The rest of an own order rests into continuous
  trading; when it starts, an own order resting through the feed's other side takes it
  as on arrival (taker; bids, then asks, best price first, then oldest).
* **Time in force** (as in the matching engine): GTC and DAY rest what is left (DAY orders expire after the
  feed's last record, ``day_end``); IOC drops the rest; FOK is checked against the visible
  (unconsumed) liquidity within its limit first and rejected whole when it cannot fill
  (a ``rejected`` event only, no ``accepted``; its id stays free);
  market orders never rest. A modify that only lowers the quantity at the same price keeps
  the place (and the shares ahead); any other is a cancel and replace under the same id
  that may trade and rests at the back, keeping its time in force.
* **Bad instructions** (unknown or finished order, duplicate id, non-positive quantity,
  limit without price, an instrument the feed never names) are ``rejected`` events with a
  reason, never an error; a malformed row is a FeedError naming the row. A bad feed record
  is a FeedError whose ``partial`` (a SimResult) holds the tables of the records before it.

Outputs (:class:`SimResult`):

* ``fills``: seq (the feed record that caused the fill; for your instructions the feed record
  of the book they came before, null after the book's last record), time, instrument,
  order_id, side, price, quantity, liquidity (``taker`` / ``maker``), priority_differs.
* ``events``: accepted, rejected (reason), rested, modified, partially_filled, filled,
  cancelled, expired, and ``queue`` (the shares ahead changed), each with the shares ahead
  (``shares_ahead``, null when the order does not rest) and the remaining quantity.
* ``summary``: one row per own order: arrival, final status, filled, fill ratio, time to
  fill, average price, the feed's mid at arrival and ``horizon`` seconds later, and the
  average price against both (signed: positive = worse than the mid for you).
* ``bbo`` (and the other ``feed_tables``): the feed's tables exactly as a plain replay gives
  them (own orders never change them; with zero own orders the simulation is a replay).
* ``bbo_with_own``: for the instruments with own orders, the best bid and offer as your
  orders would have changed them (feed shares less consumed ones, plus your resting
  orders): a row whenever that changes.
* ``depth_with_own`` (``own_tables=("depth_with_own",)``): for the same instruments, the
  top ``levels`` levels a side with the feed's ``depth`` columns (price, shares, orders a
  level) as your orders would have changed them: each feed level's shares less the ones your
  crossing orders consumed (a level whose shares are all consumed is gone), your resting
  orders' shares and order count added at their prices (a price only you rest at is a level
  of its own): a row whenever any of those levels changes. With no own order resting or
  consuming anything it is the feed's ``depth`` of those instruments, row for row.
"""

from __future__ import annotations

import numbers
import os

import pyarrow as pa

from ..checks import (check_flag, check_format_name, check_names, check_orders_path, check_progress,
                      check_seed, check_workers)
from ..errors import FeedError, ObookError

__all__ = ["simulate", "SimResult", "TABLES"]

TABLES = ("fills", "events", "summary", "bbo_with_own", "depth_with_own")
#: the with-own views, computed only when asked for (``own_tables``)
OWN_TABLES = ("bbo_with_own", "depth_with_own")


class SimResult:
    """The tables of one simulation (``fills``, ``events``, ``summary``, the with-own views and
    the feed tables asked for), as ``pyarrow.Table`` attributes; ``stats``: the replay's."""

    #: what the errors call the run
    RUN = "simulation"

    def __init__(self, tables: dict, stats: dict):
        self._tables = tables
        self.stats = stats

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._tables[name]
        except KeyError:
            raise AttributeError(f"no table {name!r} in this {self.RUN} ({', '.join(self._tables)})") from None

    def table(self, name: str) -> pa.Table:
        if name not in self._tables:
            raise ObookError(f"no table {name!r} in this {self.RUN}; it has {', '.join(self._tables)}")
        return self._tables[name]

    def reader(self, name: str = "fills") -> pa.RecordBatchReader:
        t = self.table(name)
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tables)


def simulate(feed, orders, *, latency=0, seed: int = 0, horizon: float = 1.0, workers: int | None = None,
             format=None, feed_tables=("bbo",), on_error: str = "raise", date=None,
             day_end: bool = True, levels: int = 10, own_tables=("bbo_with_own",), progress=None) -> SimResult:
    """Replay ``feed`` with your ``orders`` in it (see the module doc for the semantics).

    ``feed``: a path, a stream, or one feed in several files: a glob pattern, or a list or
    tuple of paths and patterns (the files in that order, a pattern's sorted).
    ``orders``: order entry (CSV / Parquet / Arrow path, or an Arrow, polars or DuckDB
    table; :mod:`obook.feeds.orders`). ``latency``: ns (an integer, a column name, per-row
    values, or a distribution drawn with ``seed``: a tuple ``("uniform", lo, hi)`` or its text
    ``"uniform:LO:HI"``). ``horizon``: seconds after arrival
    of the summary's later mid. ``feed_tables``: the replay's own tables to return too
    (bbo, trades, orders, depth; () for none: then only your instruments' books are
    replayed, which is much faster). ``workers``, ``format``, ``on_error``, ``date``:
    as for replays (with a session date, given or the feed's own, every table with ``time``
    gets ``timestamp`` after it, yours too; the summary has none). ``day_end``: DAY orders expire after the feed's last record.
    ``own_tables``: the with-own views to build, ``bbo_with_own`` and / or ``depth_with_own``
    (its ``levels`` a side, 1 to 50, as the feed's ``depth``). ``progress``: called with the
    bytes of the feed read so far, e.g. for a progress bar.
    """
    return simulated(dict(locals()))


def simulated(given: dict, latency_name: str = "latency") -> SimResult:
    """:func:`simulate` of its arguments ``given`` (by name, every one), its errors about the
    latency naming it by ``latency_name`` (a front end's own name: the command line's
    ``--latency``)."""
    from ..engine.replay import Replay
    from ..engine.workers import mp_context
    from ..feeds import resolve_format
    from ..feeds.orders import read_orders
    from ..feeds.orders.reader import to_table
    from ..session import stamp_of
    from .observer import SimObserver, warm
    from .prepare import latencies, prepare_own
    from .source import feed_source
    from .tables import build_tables, stamped, with_units

    feed, orders, latency, seed, horizon, workers, format = (given[k] for k in (
        "feed", "orders", "latency", "seed", "horizon", "workers", "format"))
    feed_tables, on_error, date, day_end, levels, own_tables, progress = (given[k] for k in (
        "feed_tables", "on_error", "date", "day_end", "levels", "own_tables", "progress"))
    feed = feed_source(feed)
    checked = checked_options(seed=seed, horizon=horizon, workers=workers, format=format, on_error=on_error,
                              date=date, day_end=day_end)
    seed, workers, day_end = checked["seed"], checked["workers"], checked["day_end"]
    feed_tables = check_names("feed_tables", feed_tables)
    own_tables = check_names("own_tables", own_tables)
    check_progress(progress)
    check_orders_path(orders)
    fmt = resolve_format(format, feed)
    table = to_table(orders)
    o = read_orders(table, name=os.fspath(orders) if isinstance(orders, (str, os.PathLike)) else None)
    lat = latencies(latency, o.n, table, seed, name=o.name, option=latency_name)
    own = prepare_own(o, int(fmt.time_unit_ns), lat, int(round(horizon * 1e9)))
    own_tables = tuple(dict.fromkeys(own_tables))
    bad = [t for t in own_tables if t not in OWN_TABLES]
    if bad:
        raise ObookError(f"unknown own table(s) {', '.join(map(str, bad))}; choose from {', '.join(OWN_TABLES)}")
    if "depth_with_own" in own_tables:
        from ..engine.tables import check_tables
        check_tables(("depth",), levels)     # the feed depth's range and message
    # without feed tables only the books of your instruments are replayed (ticker pushdown:
    # the decoders skip the other books' records); the simulation is the same either way
    pushdown = tuple(own.instruments) if not feed_tables and own.instruments else None
    if mp_context(fmt).get_start_method() == "fork":
        warm()      # forked workers inherit the loaded kernels instead of each loading them
    observer = SimObserver(own, want_bbo="bbo_with_own" in own_tables, day_end=day_end,
                           want_depth="depth_with_own" in own_tables, levels=levels, continuous=fmt.continuous)
    replay = Replay(feed, workers=workers, format=fmt, on_error=on_error, tables=feed_tables or ("bbo",),
                    levels=levels, date=date, observer=observer, tickers=pushdown, unknown_tickers="ignore",
                    progress=progress)
    stamp = stamp_of(replay.format, replay.session)
    _check_arrivals(own, o, stamp, replay.session)
    got: dict[str, list] = {t: [] for t in feed_tables}
    want = dict(want_bbo="bbo_with_own" in own_tables, depth_levels=levels if "depth_with_own" in own_tables else 0)
    try:
        for name, batch in replay.table_batches():
            if name in got:
                got[name].append(batch)
    except FeedError as e:         # the tables of the records before the bad one
        if replay.observed and e.feed_record is not None:
            out = {t: pa.Table.from_batches(b, schema=replay.schema(t)) for t, b in got.items()}
            sim = with_units(stamped(build_tables(own, replay.observed, before=e.feed_record, **want), stamp), fmt)
            e.partial = SimResult({**sim, **out}, dict(replay.stats))
        raise
    out = {t: pa.Table.from_batches(b, schema=replay.schema(t)) for t, b in got.items()}
    sim = with_units(stamped(build_tables(own, replay.observed, **want), stamp), fmt)
    _warn_unseen(own, replay.observed, o.name)
    _warn_late(replay.observed, o.name, int(fmt.time_unit_ns))
    stats = dict(replay.stats)
    stats.update(own_instructions=own.n_rows, fills=sim["fills"].num_rows)
    return SimResult({**sim, **out}, stats)


def checked_options(*, seed: int = 0, horizon: float = 1.0, workers: int | None = None, format=None,
                    on_error: str = "raise", date=None, day_end: bool = True) -> dict:
    """:func:`simulate`'s options checked (an ``ObookError`` naming the first wrong one); the
    front ends check theirs with it before the run (``latency`` is checked with the orders,
    ``levels`` with the tables)."""
    from ..checks import check_choice, check_date
    from ..engine.replay import ON_ERROR

    check_format_name(format)
    given = dict(workers=check_workers(workers), day_end=check_flag("day_end", day_end), seed=check_seed(seed))
    if isinstance(horizon, bool) or not isinstance(horizon, numbers.Real) or not 0 <= horizon <= 7 * 86_400:
        raise ObookError(f"horizon must be between 0 and 604800 seconds (a week), not {horizon!r}")
    check_choice("on_error", on_error, ON_ERROR)
    check_date(date)
    return given


def _check_arrivals(own, o, stamp, day) -> None:
    """An ObookError naming the first order row whose arrival no ns ``timestamp`` holds (with
    the session date ``day``); the feed's own times the replay checks."""
    import numpy as np

    from .._kernels.simulate_layout import I_ARR, I_ROW
    from ..session import first_out_of_range

    if stamp.base_ns is None:
        return
    arrival = np.zeros(own.n_rows, np.int64)       # in the orders' row order
    arrival[own.ins[:, I_ROW] - 1] = own.ins[:, I_ARR]
    bad = first_out_of_range(pa.array(arrival), stamp.base_ns, stamp.scale)
    if bad >= 0:
        on = f" with the session date {day}" if day else ""
        raise ObookError(f"{o.name or '<orders>'}: row {bad + 1}: time {int(o.time[bad])} (arrival "
                         f"{int(arrival[bad])}) gives an instant beyond 1677-2262{on}, what ns timestamps hold")


def _warn_unseen(own, observed: list, name) -> None:
    """A warning naming the orders' instruments the feed never named (their instructions are
    all rejected as ``unknown instrument``: a ticker misspelt, or orders of another feed)."""
    import logging

    import numpy as np

    seen = np.zeros(len(own.instruments), bool)
    for part in observed:
        seen |= part["seen"]
    unseen = [own.instruments[i] for i in np.flatnonzero(~seen)]
    if unseen:
        shown = ", ".join(map(str, unseen[:5])) + (f" and {len(unseen) - 5} more" if len(unseen) > 5 else "")
        logging.getLogger("obook").warning(
            "%s: the feed has no instrument %s: %s instructions are rejected (unknown instrument)",
            name or "<orders>", shown, "their" if len(unseen) > 1 else "its")


def _warn_late(observed: list, name, unit_ns: int) -> None:
    """A warning when every instruction of a book the feed showed arrives after that book's
    last record: they only rest until the day ends, most often because the orders' times are
    in another unit than the feed's."""
    import logging

    from ..tables.units import time_unit_name

    shown = sum(part["shown"] for part in observed)
    if shown and sum(part["late"] for part in observed) == shown:
        logging.getLogger("obook").warning(
            "%s: every instruction arrives after the last record of its instrument (the feed's last time is %d): "
            "they rest until the day ends; the orders' times are in the feed's time unit (%s since midnight)",
            name or "<orders>", max(part["last_time"] for part in observed), time_unit_name(unit_ns))
