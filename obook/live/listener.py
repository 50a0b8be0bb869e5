"""The listener. :func:`Listener` gives the compiled one
(:class:`~obook.live.hot_listener.HotListener`: sockets to orders in one compiled loop);
:class:`PythonListener` is the same path in Python around the kernels (a
:class:`~obook.live.feed.LiveFeed` read by obook's streaming replay, the tick-to-trade chain
behind it), used where the kernels run as Python (``OBOOK_KERNELS=python``) or asked for
with ``loop="python"``.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from ..checks import MAX_SECONDS, MAX_SPIN_US, check_choice, check_number
from ..errors import FeedError, ObookError
from ..feeds.mold.side import RECORD_FIELDS    # mold_seq, line, ts_recv: as a capture replay's
from .feed import LiveFeed, live_error
from .latency import Histogram, now


class PythonListener:
    """Listen to lines A and B (``(host, port)`` each; a multicast group is joined) and
    replay what they deliver. ``request``: the re-request server's ``(host, port)``.
    ``tables``: as for a replay ("bbo", "trades", "orders", "depth"). ``tick_to_trade``: a
    TickToTrade run on every BBO batch. ``on_gap``: "raise" (a range lost on both lines is an
    ObookError) or "skip" (it goes to the ``gaps`` stats, the replay turns tolerant)."""

    def __init__(self, line_a, line_b, request=None, tables=("bbo",), tick_to_trade=None,
                 on_gap: str = "raise", date=None, levels: int = 10, **feed_options):
        from ..engine.replay import Replay

        on_gap = check_choice("on_gap", on_gap, ("raise", "skip"))
        warm_up(tables, levels)
        self.feed = LiveFeed(line_a, line_b, request, on_gap=on_gap, **feed_options)
        try:
            self.replay = Replay(self.feed, workers=1, format="itch", tables=tables, levels=levels,
                                 on_error="raise" if on_gap == "raise" else "skip", date=date,
                                 breaks=False)      # (live trades: a break is not known ahead)
        except BaseException:
            self.feed.close()
            raise
        self.ttt = tick_to_trade
        self._warned = False
        if tick_to_trade is not None and tick_to_trade.gateway is not None:
            self.feed.tick = tick_to_trade.gateway.poll     # heartbeats while the feed is quiet
        self.book = Histogram("book")
        self.end_to_end = Histogram("recv-to-book")

    def schema(self, table: str = "bbo") -> pa.Schema:
        """The replay's schema, then ``mold_seq``, ``line`` and ``ts_recv`` (as a capture
        replay's tables)."""
        schema = self.replay.schema(table)
        for f in RECORD_FIELDS:
            schema = schema.append(f)
        return schema

    def _with_record_columns(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        for f, a in zip(RECORD_FIELDS, self.feed.record_columns(batch.column("seq").to_numpy())):
            batch = batch.append_column(f, a)
        return batch

    def table_batches(self) -> Iterator[tuple[str, pa.RecordBatch]]:
        """(table, batch) as the books change, until the end of session (or an error, or the
        consumer stops); the sockets and the gateway are closed after. A bad message is a
        FeedError naming its line, MoldUDP64 session and sequence number."""
        feed = self.feed
        try:
            try:
                for table, batch in self.replay.table_batches():
                    if table == "bbo":
                        t = now()
                        if self.ttt is not None:
                            try:
                                self.ttt.on_bbo(batch, feed, t)
                            except ObookError:    # strategy, risk or venue: the rows of the batch still go out
                                yield table, self._with_record_columns(batch)
                                raise
                        idx = batch.column("seq").to_numpy() & feed.mask   # counted off the path
                        self.book.record(t - feed.t_handover[idx])
                        self.end_to_end.record(t - feed.t_kernel[idx])
                    yield table, self._with_record_columns(batch)
            except FeedError as e:
                error = live_error(e, feed.message_of, feed.addresses, feed.session())
                if error is e:
                    raise
                raise error from e
        finally:
            self.close()

    def stop(self) -> None:
        """End the session here, as its end would: what was received is still replayed and
        ``table_batches`` ends after it (safe to call from a signal handler)."""
        self.feed.done = True

    def close(self) -> None:
        self.feed.close()
        if self.ttt is not None and self.ttt.tickers and self.replay.stats.get("complete") and not self._warned:
            from .strategy import warn_tickers_missing      # (the session ended: its directory is complete)

            self._warned = True     # (once: the front ends close it again)
            warn_tickers_missing(sorted(self.ttt.tickers - self.replay.tickers_named()))
        if self.ttt is not None and self.ttt.gateway is not None:
            self.ttt.gateway.close()

    def stats(self) -> dict:
        out = self.feed.stats()
        out.update(records=self.replay.stats.get("records", 0), rows=self.replay.stats.get("table_rows", {}))
        if self.ttt is not None:
            out.update(strategy_calls=self.ttt.calls, orders=len(self.ttt.orders), refused=dict(self.ttt.risk.refused))
        return out

    def line_stats_table(self) -> pa.Table:
        """Per line (A, B, and ``request``: the re-request server's answers) the counts of a
        capture replay's ``line_stats`` table so far (``capture`` null, ``address`` and
        ``port`` where the line listens)."""
        from ..feeds.mold.side import line_stats_batch
        from ..feeds.mold.stream import STAT_NAMES
        from .feed import LINES

        stats = self.feed.arbiter.stats
        return pa.Table.from_batches([line_stats_batch(
            [[line, None, *(self.feed.addresses[i] or (None, None)), *(stats[i][n] for n in STAT_NAMES)]
             for i, line in enumerate(LINES)])])

    def gaps_table(self) -> pa.Table:
        """The ranges given up (``on_gap="skip"``), as a capture replay's ``gaps`` table:
        ``ts_before`` the receive stamp of the last message before the gap, ``ts_after``
        when it was given up."""
        from ..feeds.mold.side import gaps_batch

        return pa.Table.from_batches([gaps_batch(self.feed.lost)])

    def latency(self) -> list[Histogram]:
        """Per stage, in path order, then the end-to-end ones."""
        h = self.feed.hists
        out = [h["recv"], h["decode"], h["handover"], self.book]
        if self.ttt is not None:
            venue, t2t = self.ttt.venue_hists()
            out += [self.ttt.hists["strategy"], self.ttt.hists["risk"], self.ttt.hists["gateway"], venue]
            return out + [self.end_to_end, t2t]
        return out + [self.end_to_end]


def _compiled_only() -> dict:
    """The compiled loop's own options and their defaults."""
    from .net import RCVBUF

    return {"spin": False, "spin_us": 0.0, "cpu": None, "rcvbuf": RCVBUF, "slice_s": None, "realtime": 0}


def check_loop_options(loop: str, options: dict) -> None:
    """The Python loop asked for with options of the compiled loop's (they would be dropped
    unseen): an ObookError naming them."""
    if loop != "python":
        return
    given = [n for n, default in _compiled_only().items() if options.get(n, default) != default]
    if given:
        raise ObookError(f"{', '.join('--' + n.replace('_', '-') for n in given)}: the compiled loop's "
                         f"option{'s' if len(given) > 1 else ''}; the Python loop (--loop python) takes none")


#: the listeners' numeric options: (lowest, highest, whole, above the lowest)
_NUMBERS = {"gap_wait": (0, MAX_SECONDS, False, False), "request_timeout": (0, MAX_SECONDS, False, True),
            "retries": (0, 1_000_000, True, False), "idle_timeout": (0, MAX_SECONDS, False, True),
            "spin_us": (0, MAX_SPIN_US, False, False), "rcvbuf": (4096, 2**31 - 1, True, False)}


def check_listen_numbers(options: dict) -> None:
    """The numeric options of a listener in range (``idle_timeout`` may be None): an
    ObookError naming the option, not an overflow in the loop or a wait that never ends."""
    for name, (lo, hi, whole, above) in _NUMBERS.items():
        if options.get(name) is not None:
            check_number(name, options[name], lo, hi, whole=whole, above=above)


def Listener(*args, loop: str = "compiled", **options):
    """The live listener (see the module's docstring); ``loop``: "compiled" (the default)
    or "python". Options: those of :class:`~obook.live.hot_listener.HotListener`
    (``spin``, ``spin_us``, ``cpu``, ``rcvbuf``, ``realtime`` are the compiled loop's only)."""
    from .._kernels.jit import INTERPRETED

    loop = check_choice("loop", loop, ("compiled", "python"))
    if "on_gap" in options:     # (the loops compare it as given)
        options["on_gap"] = check_choice("on_gap", options["on_gap"], ("raise", "skip"))
    from ..feeds.mold.packets import check_session_option

    check_session_option(options.get("session"))       # before the warm-up (the loops check it too)
    check_loop_options(loop, options)
    check_listen_numbers(options)
    if loop == "python" or INTERPRETED:
        for name in _compiled_only():
            options.pop(name, None)
        return PythonListener(*args, **options)
    from .hot_listener import HotListener

    return HotListener(*args, **options)


def warm_up(tables=("bbo",), levels: int = 10) -> None:
    """Load the replay's kernels (numba's cache) before the first packet: a one-message
    day replayed from memory."""
    import io

    from ..engine.replay import Replay

    msg = b"S" + bytes(10) + b"O"
    for _ in Replay(io.BytesIO(len(msg).to_bytes(2, "big") + msg), workers=1, format="itch",
                    tables=tables, levels=levels, breaks=False).table_batches():
        pass


def listen(line_a, line_b, request=None, table: str = "bbo", **options) -> Iterator[pa.RecordBatch]:
    """The live ``table`` (default the BBO) as an iterator of Arrow batches, until the end of
    session: ``obook.listen(("127.0.0.1", 31001), ("127.0.0.1", 31002), request=("127.0.0.1",
    31003))``. Addresses may also be "host:port" strings (IPv4: the UDP lines take no IPv6). Options: those of :class:`Listener`."""
    from ..errors import ObookError
    from .net import parse_address

    def addr(a, what):
        if (isinstance(a, (tuple, list)) and len(a) == 2 and isinstance(a[0], str) and isinstance(a[1], int)
                and not isinstance(a[1], bool)):
            a = f"[{a[0]}]:{a[1]}" if ":" in a[0] else f"{a[0]}:{a[1]}"
        if not isinstance(a, str):
            raise ObookError(f'{what} {a!r}: give "host:port" or (host, port)')
        return parse_address(a, what, port_zero=False, ipv6=False)     # the sender must know the port

    if "tables" in options:
        raise ObookError(f"tables={options['tables']!r}: listen yields one table, named by table= (default 'bbo')")
    strategy = options.get("strategy")
    if strategy is not None:
        from .strategy import check_live_strategy

        check_live_strategy(strategy, f"strategy {repr(strategy)[:80]}")
    lst = Listener(addr(line_a, "line_a"), addr(line_b, "line_b"), None if request is None else addr(request, "request="),
                   tables=(table,), **options)
    for _t, batch in lst.table_batches():
        yield batch


__all__ = ["Listener", "PythonListener", "listen", "warm_up"]
