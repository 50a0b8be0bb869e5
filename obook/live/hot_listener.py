"""The listener on the compiled loop (:mod:`obook.live.hotpath`): lines A and B arbitrated,
the books, the strategy and the orders in one compiled loop; the tables written by obook's
replay engine from the loop's delivered messages in the consumer's thread (the caller of
:meth:`HotListener.table_batches`), never in the loop's.

Same interface as :class:`~obook.live.listener.Listener` (``table_batches``, ``stats``,
``line_stats_table``, ``gaps_table``, ``latency``, ``schema``), plus ``digest()`` (the
orders sent) and ``run()`` (the loop alone, no tables).
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Iterator

import pyarrow as pa

from .._kernels import live_layout as L
from ..checks import check_choice
from ..errors import FeedError
from .net import RCVBUF, ipv4_only, kernel_drops, line_socket, mold_filter

REST_US = 100.0     # a spinning real-time loop's rest in each millisecond
#: a real-time loop's time slice: each return to Python takes the GIL, which a thread of
#: normal priority may hold while it waits for a core (measured: up to 28 ms at load 8)
REALTIME_SLICE_S = 1.0


def _line_sockets(line_a, line_b, interface, rcvbuf, kernel_filter=True):
    socks, stamped, sizes = [], True, []
    try:
        for name, (host, port) in zip(("line A", "line B"), (line_a, line_b)):
            s, st = line_socket(host, port, interface, name)
            socks.append(s)
            stamped &= st
            if kernel_filter:
                mold_filter(s)
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            except OSError:
                pass
            sizes.append(s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
    except BaseException:
        for s in socks:
            s.close()
        raise
    return socks, stamped, sizes


class HotListener:
    """Listen to lines A and B (``(host, port)``; multicast groups joined) through the
    compiled loop. ``tables``: as for a replay (empty: none, see :meth:`run`).
    ``tick_to_trade``: a TickToTrade whose strategy, tickers, risk gate and gateway the loop
    takes (or give ``strategy``, ``tickers``, ``risk``, ``gateway``). ``spin``: busy-poll the
    sockets instead of sleeping in poll(); ``spin_us``: busy-poll this long after each
    datagram before sleeping; ``cpu``: pin the loop's thread to that core; ``realtime``: run it
    under SCHED_FIFO at that priority (spinning, it then rests ``rest_us``, default 100 µs, in
    each millisecond: the kernel stops a real-time thread that never sleeps for tens of ms;
    and returns to Python once a second instead of every ``slice_s``, 0.05 s);
    ``rcvbuf``: the sockets' receive buffer (bytes asked; ``stats()`` says what was given);
    ``kernel_filter``: a socket filter drops datagrams whose MoldUDP64 header does not hold
    together in the kernel, before they are queued (``stats()``: each line's ``kernel_drops``,
    the filter's and a full buffer's)."""

    def __init__(self, line_a, line_b, request=None, tables=("bbo",), tick_to_trade=None,
                 on_gap: str = "raise", date=None, levels: int = 10, *, strategy=None, tickers=None,
                 risk=None, gateway=None, interface: str = "127.0.0.1", gap_wait: float = 0.05,
                 request_timeout: float = 0.2, retries: int = 3, idle_timeout: float | None = None,
                 max_request: int = 1000, session: str | None = None, spin: bool = False,
                 spin_us: float = 0.0, cpu: int | None = None, rcvbuf: int = RCVBUF, slice_s: float | None = None,
                 realtime: int = 0, rest_us: float | None = None, kernel_filter: bool = True):
        from ..feeds.mold.packets import check_session_option
        from .hotpath import HotLoop, check_cpu, check_realtime
        from .listener import warm_up

        on_gap = check_choice("on_gap", on_gap, ("raise", "skip"))
        check_realtime(realtime, "realtime=")   # refused here, before the sockets, not in the loop's thread
        check_cpu(cpu, "cpu=")
        check_session_option(session)   # before the warm-up and the sockets (HotLoop checks it too)
        ipv4_only(request, "request=")
        self.ttt = tick_to_trade
        if tick_to_trade is not None:
            strategy, tickers = tick_to_trade.strategy, tick_to_trade.tickers
            risk, gateway = tick_to_trade.risk, tick_to_trade.gateway
        self.tables = tuple(tables)
        if self.tables:
            warm_up(self.tables, levels)
        self.addresses = [tuple(line_a), tuple(line_b), tuple(request) if request else None]
        self.socks, self.kernel_stamps, self.rcvbuf = _line_sockets(line_a, line_b, interface, rcvbuf, kernel_filter)
        self._kernel_drops = [None, None]
        self.req = None
        try:
            if request is not None:
                self.req = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                self.req.bind(("127.0.0.1" if request[0].startswith("127.") else "0.0.0.0", 0))
                self.req.connect(tuple(request))
                self.req.setblocking(False)
            self.loop = HotLoop(self.socks, self.req, strategy, tickers, risk, gateway, lines=self.addresses,
                                on_gap=on_gap, gap_wait=gap_wait, request_timeout=request_timeout, retries=retries,
                                max_request=max_request, spin=spin, spin_us=spin_us,
                                slice_s=(REALTIME_SLICE_S if realtime else 0.05) if slice_s is None else slice_s,
                                session=session,
                                rest_us=(REST_US if realtime and spin else 0.0) if rest_us is None else rest_us)
        except BaseException:
            self._close_sockets()
            raise
        self.gateway = gateway
        self.on_gap, self.date, self.levels = on_gap, date, levels
        self.idle_timeout = idle_timeout
        self.cpu = cpu
        self.realtime = realtime
        self.replay = None
        self._finished = False
        self._error: BaseException | None = None
        self._thread = None
        self._closed = False

    # -- running -----------------------------------------------------------------------------

    def run(self) -> None:
        """The loop in this thread until the end of session (no tables)."""
        from .hotpath import pin, realtime

        pin(self.cpu, "cpu=", checked=True)
        realtime(self.realtime, "realtime=")
        try:
            self.loop.run(self.idle_timeout)
            skipped = self.loop.skipped()
            if skipped:         # (with tables, the tables' replay says what it skipped)
                from .feed import lines_name

                logging.getLogger("obook").warning("%s: skipped records: %s", lines_name(self.addresses),
                                                   ", ".join(f"{k}: {v}" for k, v in sorted(skipped.items())))
        finally:
            self.close()

    def _loop_thread(self) -> None:
        from .hotpath import pin, realtime

        try:
            pin(self.cpu, "cpu=", checked=True)
            realtime(self.realtime, "realtime=")
            self.loop.run(self.idle_timeout)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer's thread
            self._error = e
        finally:
            self._finished = True

    def _done(self) -> bool:
        if self._error is not None:
            raise self._error
        return self._finished

    def table_batches(self) -> Iterator[tuple[str, pa.RecordBatch]]:
        """(table, batch) as the books change, until the end of session; the loop runs in
        its own thread meanwhile. Without tables: the loop runs here, nothing is yielded.
        A bad message is a FeedError naming its line, MoldUDP64 session and sequence number."""
        if not self.tables:
            self.run()
            return
        from ..engine.replay import Replay
        from .feed import lines_name, live_error
        from .hotpath import RingSource

        source = RingSource(self.loop, self._done, lines_name(self.addresses))
        self.source = source
        try:
            self.replay = Replay(source, workers=1, format="itch", tables=self.tables, levels=self.levels,
                                 on_error="raise" if self.on_gap == "raise" else "skip", date=self.date,
                                 breaks=False)      # (live trades: a break is not known ahead)
            self._thread = threading.Thread(target=self._loop_thread, name="obook-live-loop", daemon=True)
            self._thread.start()
            try:
                for table, batch in self.replay.table_batches():
                    yield table, self._with_record_columns(batch)
            except FeedError as e:
                error = live_error(e, self.loop.message_of, self.addresses, self.loop.session())
                if error is e:
                    raise
                raise error from e
            self._done()
        finally:
            self.close()

    def _with_record_columns(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        from ..feeds.mold.side import RECORD_FIELDS

        for f, a in zip(RECORD_FIELDS, self.source.record_columns(batch.column("seq").to_numpy())):
            batch = batch.append_column(f, a)
        return batch

    def schema(self, table: str = "bbo") -> pa.Schema:
        from ..engine.replay import Replay
        from ..feeds.mold.side import RECORD_FIELDS
        import io

        schema = Replay(io.BytesIO(b""), workers=1, format="itch", tables=(table,), levels=self.levels,
                        date=self.date).schema(table)
        for f in RECORD_FIELDS:
            schema = schema.append(f)
        return schema

    def _close_sockets(self) -> None:
        for i, s in enumerate(self.socks):
            self._kernel_drops[i] = kernel_drops(s)
        for s in self.socks + ([self.req] if self.req is not None else []):
            s.close()
        self.socks, self.req = [], None

    def stop(self) -> None:
        """End the session here, as its end would: what was received is still replayed and
        ``table_batches`` ends after it (safe to call from a signal handler)."""
        self.loop.stop()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.loop.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        self._close_sockets()
        if self._ended():       # (the session ended: its directory is complete)
            from .strategy import warn_tickers_missing

            warn_tickers_missing(self.loop.tickers_missing())
        if self.gateway is not None:
            self.loop.finish_venue(self.gateway.timeout)
        if self.ttt is not None:
            self._settle(self.ttt)

    def _ended(self) -> bool:
        """Whether the session's end came and every message before it."""
        S = self.loop.S
        return bool(S[L.S_END] >= 0 and S[L.S_NEXT] >= S[L.S_END])

    @property
    def feed(self):
        """(What a Python listener's feed answered: ``socks``, empty once closed.)"""
        return self

    def _settle(self, ttt) -> None:
        """Hand the loop's orders and stamps to the TickToTrade it took (its ``orders``,
        ``calls``, ``digest()``, ``venue_hists()`` and its gateway's ``sent`` / stamps)."""
        from .ouch import decode
        from .strategy import TickToTrade

        msgs = self.loop.messages()
        ttt.orders = [decode(m) for m in msgs]
        ttt.calls = int(self.loop.S[L.S_CALLS])
        if self.loop.compiled:
            ttt.risk.refused.update(self.loop.refused())
        for name, h in zip(("strategy", "risk", "gateway"), self.loop.histograms()[4:7]):
            ttt.hists[name] = h
        gw = ttt.gateway
        if gw is not None:
            closed_at = self.loop.venue_closed_at
            gw.sent = list(msgs if closed_at is None else msgs[:closed_at])
            if closed_at is not None:
                gw.ended = True
                gw.unsent = self.orders - closed_at
            refs = self.loop.refs
            for ref, sent, kernel, venue in refs.T[refs[1] != 0]:
                gw.sent_ns.setdefault(int(ref), int(sent))
                ttt._kernel_of.setdefault(int(ref), int(kernel))
                if venue:
                    gw.venue_ns.setdefault(int(ref), int(venue))
            S = self.loop.S
            gw.answers, gw.rejected = int(S[L.S_ANSWERS]), int(S[L.S_REJECTED])
            if gw.rejected:
                gw.first_rejected = (int(S[L.S_REJECT_REF]), int(S[L.S_REJECT_REASON]))
        assert isinstance(ttt, TickToTrade)

    # -- results -----------------------------------------------------------------------------

    def digest(self) -> str:
        return self.loop.digest()

    @property
    def orders(self) -> int:
        return int(self.loop.S[L.S_ORDERS])

    def stats(self) -> dict:
        from ..feeds.mold.arbiter import STAT_KEYS
        from .feed import LINES

        S = self.loop.S
        lines = {LINES[i]: {k: int(self.loop.stats_arr[i, j]) for j, k in enumerate(STAT_KEYS)}
                 for i in range(L.N_LINES)}
        for i, sock in enumerate(self.socks):          # open: the count now; closed: at closing
            self._kernel_drops[i] = kernel_drops(sock)
        out = {"lines": lines, "gaps": [{"first_seq": f, "count": c, "ts": ts} for f, c, _b, ts in self.lost()],
               "requests": int(S[L.S_REQUESTS]), "next_seq": int(S[L.S_NEXT]),
               "ended": self._ended(),
               "kernel_stamps": self.kernel_stamps, "records": int(S[L.S_W_REC]),
               "rcvbuf": self.rcvbuf, "held_too_far": int(S[L.S_PEND_FULL]), "session": self.loop.session(),
               "session_probes": int(S[L.S_PROBES]),
               "kernel_drops": {LINES[i]: self._kernel_drops[i] for i in range(2)}}
        if self.replay is not None:
            out["rows"] = self.replay.stats.get("table_rows", {})
        if S[L.S_T_LAPPED]:
            out["tables_stopped_before"] = int(S[L.S_T_LAPPED])
        if S[L.S_HAS_STRATEGY]:
            out.update(strategy_calls=int(S[L.S_CALLS]), orders=self.orders, refused=self.loop.refused(),
                       order_sends=int(S[L.S_OUT_SENDS]))
        return out

    def lost(self) -> list[tuple]:
        """Ranges given up: (first, count, ts before, ts given up) UTC ns."""
        S, g = self.loop.S, self.loop.gaps_out
        off = self.loop.clock.offset
        return [(int(f), int(c), None if b < 0 else int(b) + off, int(a) + off)
                for f, c, b, a in g[:min(int(S[L.S_N_GAPS]), len(g))]]

    def line_stats_table(self) -> pa.Table:
        from ..feeds.mold.side import line_stats_batch
        from ..feeds.mold.stream import STAT_NAMES
        from .feed import LINES

        st = self.stats()["lines"]
        return pa.Table.from_batches([line_stats_batch(
            [[line, None, *(self.addresses[i] or (None, None)), *(st[line][n] for n in STAT_NAMES)]
             for i, line in enumerate(LINES)])])

    def gaps_table(self) -> pa.Table:
        from ..feeds.mold.side import gaps_batch

        return pa.Table.from_batches([gaps_batch(self.lost())])

    def latency(self) -> list:
        """Per stage in path order, then recv-to-book and (with a strategy) tick-to-trade."""
        h = {x.name: x for x in self.loop.histograms()}
        names = ["recv", "decode", "handover", "book"]
        if self.loop.S[L.S_HAS_STRATEGY]:
            names += ["strategy", "risk", "gateway", "venue", "recv-to-book", "tick-to-trade"]
        else:
            names += ["recv-to-book"]
        return [h[n] for n in names]


__all__ = ["HotListener"]
