"""A Databento MBO flow (obook.gen.databento) as hftbacktest's L3 event arrays, and the
simple market maker written for both backtesters (tests and benchmarks/bench_backtest.py).

The market maker, on a timer: for each side, one order of ``QTY`` at the best price of its
side; when the best price moves away from it, cancel it, and once the cancel is confirmed,
quote again at the new best.
"""

from __future__ import annotations

import numpy as np

QTY = 1
TICK = 10_000_000          # $0.01 in DBN's 1e-9 units


def steady_day(records: int, seed: int) -> np.ndarray:
    """A one-instrument MBO flow (obook.gen.databento) whose mid never moves, so its book
    never crosses: the generator's drifting mid leaves old orders behind it and crosses the
    book, where a market maker quoting at each best takes liquidity on most calls."""
    from obook.gen.databento import mbo_flow

    return mbo_flow(records, instruments=1, seed=seed, clears=0.0, drift=False)


def fifo_day(flow: np.ndarray) -> np.ndarray:
    """The flow rewritten so that its trades fill the resting orders in time priority (a
    price change or a size increase loses it), every record of an event (F_LAST
    delimited) at the event's first time, as Databento stamps them. The generator fills
    orders out of that order on purpose (the replay must take what the venue did); on
    such a day obook's and hftbacktest's FIFO rules cannot disagree about who is filled."""
    recs = flow.tolist()
    names = flow.dtype.names
    ix = {n: k for k, n in enumerate(names)}
    queues: dict = {}
    where: dict = {}
    gone: set = set()
    out = []

    def remove(oid):
        key = where.pop(oid)
        q = queues[key]
        for j, (o, _) in enumerate(q):
            if o == oid:
                return q.pop(j)
        raise AssertionError(oid)

    group = []
    for rec in recs:
        group.append(list(rec))
        if not rec[ix["flags"]] & 0x80:
            continue
        t, dt = group[0][ix["ts_event"]], group[0][ix["ts_recv"]] - group[0][ix["ts_event"]]
        acts = [r[ix["action"]] for r in group]
        cut = acts.index(b"T") if b"T" in acts and b"F" in acts else len(group)
        kept = []
        for r in group[:cut]:                 # the records before a trade (of orders still there)
            a, oid, px, size, side = (r[ix[k]] for k in ("action", "order_id", "price", "size", "side"))
            if oid in gone and a in (b"C", b"M"):
                continue                      # already out of the rewritten book (filled or cancelled)
            kept.append(r)
            if a == b"R":
                queues.clear()
                where.clear()
            elif a == b"A" or (a == b"M" and oid not in where):
                queues.setdefault((side, px), []).append([oid, size])
                where[oid] = (side, px)
            elif a == b"M":
                key = where[oid]
                entry = next(e for e in queues[key] if e[0] == oid)
                if key[1] != px or size > entry[1]:
                    remove(oid)
                    queues.setdefault((side, px), []).append([oid, size])
                    where[oid] = (side, px)
                else:
                    entry[1] = size
            elif a == b"C" and oid in where:
                key = where[oid]
                entry = next(e for e in queues[key] if e[0] == oid)
                if size >= entry[1]:
                    r[ix["size"]] = entry[1]
                    remove(oid)
                    gone.add(oid)             # the generator may cancel the rest again later
                else:
                    entry[1] -= size
        group = kept + group[cut:]
        cut = len(kept)
        if cut < len(group):                  # the trade: fills in time priority
            fills = [r for r in group[cut:] if r[ix["action"]] == b"F" and r[ix["order_id"]] != 0]
            side, px = fills[0][ix["side"]], fills[0][ix["price"]]
            q = queues.setdefault((side, px), [])
            total = min(sum(r[ix["size"]] for r in fills), sum(e[1] for e in q))
            took = []
            while total > 0:
                oid, size = q[0]
                take = min(size, total)
                took.append((oid, take))
                total -= take
                if take == size:
                    q.pop(0)
                    del where[oid]
                    gone.add(oid)
                else:
                    q[0][1] -= take
            new = group[:cut] + [r for r in group[cut:] if r[ix["action"]] == b"T"]
            if not took:
                group = new + [list(group[-1])]
                group[-1][ix["action"]], group[-1][ix["order_id"]], group[-1][ix["size"]] = b"N", 0, 0
            for act in (b"F", b"C"):
                for oid, take in took:
                    r = list(fills[0])
                    r[ix["action"]], r[ix["order_id"]], r[ix["size"]] = act, oid, take
                    new.append(r)
            group = new
        for j, r in enumerate(group):
            r[ix["ts_event"]], r[ix["ts_recv"]] = t, t + dt
            r[ix["flags"]] = 0x80 if j == len(group) - 1 else 0
            out.append(tuple(r))
        group = []
    return np.array(out, dtype=flow.dtype)


def hbt_events(flow: np.ndarray, instrument_id: int, feed_latency: int) -> np.ndarray:
    """hftbacktest's event rows for one instrument of an MBO flow: exch_ts = ts_event (obook's
    time), local_ts = ts_event + feed_latency; prices in dollars. Records hftbacktest's L3
    exchange cannot take are left out: T (a trade print: its L3 exchange ignores it), N,
    an F that names no order (id 0, an event's closing record)."""
    from hftbacktest.types import (ADD_ORDER_EVENT, BUY_EVENT, CANCEL_ORDER_EVENT, DEPTH_CLEAR_EVENT, EXCH_EVENT,
                                   FILL_EVENT, LOCAL_EVENT, MODIFY_ORDER_EVENT, SELL_EVENT, event_dtype)


    f = flow[flow["instrument_id"] == instrument_id]
    action = f["action"]
    keep = np.isin(action, [b"A", b"C", b"M", b"R", b"F"]) & ~((action == b"F") & (f["order_id"] == 0))
    f = f[keep]
    book: dict = {}            # order id -> [price, size]
    rows = []
    for a, side, oid, px, size, ts in zip(f["action"].tolist(), f["side"].tolist(), f["order_id"].tolist(),
                                          f["price"].tolist(), f["size"].tolist(), f["ts_event"].tolist()):
        s_bit = BUY_EVENT if side == b"B" else SELL_EVENT if side == b"A" else 0
        if a == b"A" or (a == b"M" and oid not in book):     # Databento: an unknown order's M adds it
            book[oid] = [px, size]
            rows.append((ADD_ORDER_EVENT | s_bit, ts, px, size, oid))
        elif a == b"M":
            book[oid] = [px, size]
            rows.append((MODIFY_ORDER_EVENT | s_bit, ts, px, size, oid))
        elif a == b"C":
            if oid not in book:
                continue
            have_px, have = book[oid]
            if size >= have:             # hftbacktest's cancel removes the order
                del book[oid]
                rows.append((CANCEL_ORDER_EVENT | s_bit, ts, have_px, 0, oid))
            else:                        # a partial cancel: the order's size goes down, priority kept
                book[oid][1] = have - size
                rows.append((MODIFY_ORDER_EVENT | s_bit, ts, have_px, have - size, oid))
        elif a == b"R":
            book.clear()
            rows.append((DEPTH_CLEAR_EVENT, ts, 0, 0, 0))
        elif oid in book:                # F: the fill of a resting order
            rows.append((FILL_EVENT | s_bit, ts, px, size, oid))
    out = np.zeros(len(rows), event_dtype)
    if rows:
        ev, ts, px, qty, oid = zip(*rows)
        out["ev"] = np.array(ev, np.uint64) | EXCH_EVENT | LOCAL_EVENT
        out["exch_ts"] = np.array(ts, np.int64)
        out["local_ts"] = out["exch_ts"] + feed_latency
        out["px"] = np.array(px, np.int64) / 1e9
        out["qty"] = np.array(qty, np.int64)
        out["order_id"] = np.array(oid, np.uint64)
    return out


def obook_market_maker():
    """The market maker as an obook compiled strategy (called on its timer)."""
    from numba import njit

    from obook._kernels.backtest_layout import (C_ASK, C_BID, C_KIND, CALL_TIMER, LO_DONE, LO_OPEN, LO_PRICE,
                                                LO_STATE, Q_ACT, Q_ORIG, Q_POST, Q_PRICE, Q_QTY, Q_REF, Q_SIDE,
                                                Q_TB, Q_TIF, Q_MARKET)
    from obook._kernels.simulate_layout import NONE, OP_CANCEL, OP_NEW, TIF_GTC

    @njit
    def market_maker(c, lo, refkey, state, out):
        # state: 0, 1 the bid's and the ask's ref (0: none); 2 the next ref; 3, 4 a cancel was sent
        if c[C_KIND] != CALL_TIMER:
            return 0
        n = 0
        for side in range(2):
            best = c[C_BID] if side == 0 else c[C_ASK]
            ref = state[side]
            if ref != 0:
                k = refkey[ref]
                s = lo[k, LO_STATE]
                if s == LO_DONE:
                    state[side] = 0
                    ref = 0
                elif s == LO_OPEN and state[3 + side] == 0 and lo[k, LO_PRICE] != best:
                    out[n, Q_ACT], out[n, Q_REF], out[n, Q_ORIG], out[n, Q_TB] = OP_CANCEL, ref, 0, -1
                    state[3 + side] = 1
                    n += 1
            if ref == 0 and best != NONE:
                r = max(state[2], 1)
                state[2] = r + 1
                out[n, Q_ACT], out[n, Q_SIDE], out[n, Q_QTY], out[n, Q_PRICE] = OP_NEW, side, QTY, best
                out[n, Q_TIF], out[n, Q_MARKET], out[n, Q_POST] = TIF_GTC, 0, 0
                out[n, Q_REF], out[n, Q_ORIG], out[n, Q_TB] = r, 0, -1
                state[side], state[3 + side] = r, 0
                n += 1
        return n

    return market_maker


def hbt_market_maker():
    """The same market maker for hftbacktest (its elapse loop); records each fill (exchange
    time, side 0 buy / 1 sell, price tick) into ``fills`` and returns their number."""
    from hftbacktest import CANCELED, EXPIRED, FILLED, GTC, LIMIT, NEW
    from hftbacktest.order import NONE as REQ_NONE
    from numba import njit

    @njit
    def market_maker(hbt, period, fills):
        ids = np.zeros(2, np.int64)
        next_id = 1
        nf = 0
        while hbt.elapse(period) == 0:
            depth = hbt.depth(0)
            orders = hbt.orders(0)
            for side in range(2):
                best = depth.best_bid_tick if side == 0 else depth.best_ask_tick
                ref = ids[side]
                if ref != 0:
                    o = orders.get(ref)
                    if o is None or o.status == FILLED or o.status == CANCELED or o.status == EXPIRED:
                        if o is not None and o.status == FILLED and nf < fills.shape[0]:
                            fills[nf, 0], fills[nf, 1], fills[nf, 2] = o.exch_timestamp, side, o.exec_price_tick
                            nf += 1
                        ids[side] = 0
                        ref = 0
                    elif o.status == NEW and o.req == REQ_NONE and o.price_tick != best:
                        hbt.cancel(0, ref, False)
                if ref == 0 and abs(best) < 1 << 40:
                    if side == 0:
                        hbt.submit_buy_order(0, next_id, best * 0.01, float(QTY), GTC, LIMIT, False)
                    else:
                        hbt.submit_sell_order(0, next_id, best * 0.01, float(QTY), GTC, LIMIT, False)
                    ids[side] = next_id
                    next_id += 1
            hbt.clear_inactive_orders(0)
        return nf

    return market_maker
