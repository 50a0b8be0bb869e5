"""obook.simulate against the pure-Python reference (tests/reference_simulate.py) on generated
ITCH and CSV days with random own orders; 1, 2 and 3 workers give the same tables (fills,
events, summary, bbo_with_own and depth_with_own)."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

import bisect

import numpy as np
import pyarrow as pa
import pytest

from obook.gen.csv import write_csv
from obook.gen.itch import write_itch
from obook.simulation import simulate
from reference_simulate import csv_records, itch_records
from reference_simulate import simulate as reference

HORIZON = 0.002        # seconds: the summary's later mid
LEVELS = 3             # depth_with_own levels a side (few: the levels beyond are cut off)
OWN = ("bbo_with_own", "depth_with_own")
TIFS = ["GTC", "DAY", "IOC", "FOK"]


def random_orders(records, tickers, n, seed, tick, max_latency):
    """Own instructions near each ticker's touch: new (limit / market, every TIF), modify,
    cancel (some of unknown ids), a few bad quantities; ids explicit; a latency column."""
    rng = np.random.default_rng(seed)
    adds = {}
    for rec in records:
        if rec[3] in ("add", "add0"):
            adds.setdefault(rec[2], ([], []))
            adds[rec[2]][0].append(rec[1])
            adds[rec[2]][1].append((rec[7], rec[5]))
    t0, t1 = records[0][1], records[-1][1]
    rows, ids = [], {t: [] for t in tickers}
    for _ in range(n):
        ticker = tickers[rng.integers(len(tickers))]
        t = int(rng.integers(t0, t1 + 1))
        lat = int(rng.integers(0, max_latency + 1))
        kind = rng.random()
        row = dict(time=t, instrument=ticker, order_id=None, action="new", side="", type="limit", tif="GTC",
                   price=None, quantity=None, lat=lat)
        if kind < 0.65 or not ids[ticker]:
            times, prices = adds.get(ticker, ([t], [(100 * tick, 0)]))
            price, side = prices[min(bisect.bisect(times, t), len(times) - 1)]
            if rng.random() < 0.5:
                side = 1 - side                       # the other side: crosses (or sits deep)
            oid = 1 + sum(len(v) for v in ids.values())
            ids[ticker].append(oid)
            row.update(order_id=oid, side="buy" if side == 0 else "sell",
                       price=price + tick * int(rng.integers(-2, 3)),
                       quantity=int(rng.integers(0, 400)) if rng.random() < 0.02 else int(rng.integers(1, 400)),
                       tif=TIFS[rng.choice(4, p=[0.45, 0.3, 0.15, 0.1])])
            if rng.random() < 0.08:
                row.update(type="market", price=None, tif="IOC")
        elif kind < 0.85:
            row.update(action="cancel", order_id=int(rng.choice(ids[ticker])) if rng.random() < 0.9 else 99999)
        else:
            row.update(action="modify", order_id=int(rng.choice(ids[ticker])), quantity=int(rng.integers(1, 300)))
            if rng.random() < 0.5:
                row["price"] = None
        rows.append(row)
    return rows


def orders_table(rows):
    cols = ["time", "instrument", "order_id", "action", "side", "type", "tif", "price", "quantity", "lat"]
    return pa.table({c: [r[c] for r in rows] for c in cols})


def reference_instructions(rows, unit_ns, horizon_ns):
    out = []
    for i, r in enumerate(rows, 1):
        market = r["type"] == "market"
        reason = None
        if r["action"] == "new" and r["quantity"] <= 0:
            reason = 4
        elif r["action"] == "modify" and r["quantity"] is not None and r["quantity"] <= 0:
            reason = 4
        out.append(dict(row=i, arrival=r["time"] + r["lat"] // unit_ns,
                        probe=r["time"] + (r["lat"] + horizon_ns) // unit_ns,
                        instrument=r["instrument"], order_id=r["order_id"], action=r["action"],
                        side={"buy": 0, "sell": 1}.get(r["side"]), market=market, tif=TIFS.index(r["tif"]),
                        price=None if market else r["price"], quantity=r["quantity"], reason=reason))
    return out


def _side(rows, at):
    return [tuple(({0: "buy", 1: "sell"}.get(v, v) if k == at else v) for k, v in enumerate(r)) for r in rows]


def check(feed, fmt, records, seen, rows, unit_ns, continuous=None):
    horizon_ns = int(HORIZON * 1e9)
    fills, events, bbo, mids, later, depth = reference(records, seen, reference_instructions(rows, unit_ns, horizon_ns),
                                                       levels=LEVELS, continuous=continuous)
    table = orders_table(rows)
    results = [simulate(feed, table, format=fmt, workers=w, latency="lat", horizon=HORIZON, feed_tables=(),
                        own_tables=OWN, levels=LEVELS) for w in (1, 2, 3)]
    r = results[0]
    assert [tuple(x.values()) for x in r.fills.to_pylist()] == _side(fills, 4)
    assert [tuple(x.values()) for x in r.events.to_pylist()] == _side(events, 5)
    assert [tuple(x.values()) for x in r.bbo_with_own.to_pylist()] == bbo
    assert [tuple(x.values()) for x in r.depth_with_own.to_pylist()] == depth
    first_row = {}
    for i, row in enumerate(rows, 1):
        if row["action"] == "new":
            first_row.setdefault((row["instrument"], row["order_id"]), i)

    def mid(m):
        return None if m is None or None in m else (m[0] + m[1]) / 2
    paid: dict = {}
    for f in r.fills.to_pylist():
        key = (f["instrument"], f["order_id"])
        q, n = paid.get(key, (0, 0))
        paid[key] = (q + f["quantity"], n + f["quantity"] * f["price"])
    for s in r.summary.to_pylist():
        i = first_row[(s["instrument"], s["order_id"])]
        assert (s["mid_at_arrival"], s["mid_later"]) == (mid(mids.get(i)), mid(later.get(i)))
        q, n = paid.get((s["instrument"], s["order_id"]), (0, 0))
        assert (s["filled"], s["notional"]) == (q, n)
        # exact decimals: the average price rounded half-even to 4 places, never a float
        avg = (Decimal(n) / q).quantize(Decimal("0.0001"), ROUND_HALF_EVEN) if q else None
        assert s["avg_price"] == avg and (avg is None or isinstance(s["avg_price"], Decimal))
        if avg is not None and s["mid_at_arrival"] is not None:
            sign = 1 if s["side"] == "buy" else -1
            assert s["vs_mid_at_arrival"] == sign * (avg - s["mid_at_arrival"])
    for other in results[1:]:
        for t in ("fills", "events", "summary") + OWN:
            assert other.table(t).equals(r.table(t)), t
    return r


@pytest.mark.parametrize("seed", [1, 2])
def test_simulate_itch_generated_day_matches_reference_any_workers(tmp_path, seed):
    feed = tmp_path / "day.itch"
    write_itch(feed, 30_000, 6, seed)
    records, seen = itch_records(str(feed))
    tickers = sorted(seen)[:4] + ["NOPE"]
    rows = random_orders(records, tickers, 300, seed, 100, 200_000_000)
    r = check(str(feed), "itch", records, seen, rows, 1)
    assert r.fills.num_rows > 20 and r.summary.num_rows > 100
    assert pa.compute.sum(r.fills.column("priority_differs")).as_py() > 0       # passive fills happen
    assert "queue" in r.events.column("event").to_pylist()


@pytest.mark.parametrize("seed", [3, 4])
def test_simulate_csv_generated_day_matches_reference_any_workers(tmp_path, seed):
    feed = tmp_path / "day.csv"
    write_csv(feed, 20_000, 5, seed)
    records, seen = csv_records(str(feed))
    tickers = sorted(seen)[:3]
    rows = random_orders(records, tickers, 300, seed, 100, 5_000_000)
    r = check(str(feed), "csv", records, seen, rows, 1_000_000)
    assert r.fills.num_rows > 20


def test_simulate_tiny_buffers_and_python_kernels_same_tables(tmp_path, monkeypatch):
    """The growth paths (hash, levels, output rows) and the kernels run as plain Python
    (``py_func``) give the compiled run's tables."""
    from obook._kernels import simulate as K
    from obook.simulation import observer

    feed = tmp_path / "day.itch"
    write_itch(feed, 4_000, 3, 5)
    records, seen = itch_records(str(feed))
    rows = random_orders(records, sorted(seen), 60, 5, 100, 200_000_000)
    table = orders_table(rows)
    args = dict(format="itch", workers=1, latency="lat", feed_tables=(), own_tables=OWN, levels=LEVELS)
    want = simulate(str(feed), table, **args)
    monkeypatch.setattr(observer, "HASH", 16)
    monkeypatch.setattr(observer, "LEVELS", 2)
    monkeypatch.setattr(observer, "CHUNK", 4)
    tiny = simulate(str(feed), table, **args)
    monkeypatch.setattr(K, "sim_events", K.sim_events.py_func)
    monkeypatch.setattr(K, "sim_finish", K.sim_finish.py_func)
    plain = simulate(str(feed), table, **args)
    assert want.fills.num_rows > 0 and want.depth_with_own.num_rows > 0
    for t in ("fills", "events", "summary") + OWN:
        assert tiny.table(t).equals(want.table(t)), t
        assert plain.table(t).equals(want.table(t)), t


def test_simulate_without_feed_tables_replays_own_books_only_same_tables(tmp_path):
    """feed_tables=() replays only the own instruments' books (ticker pushdown): same tables."""
    feed = tmp_path / "day.itch"
    write_itch(feed, 20_000, 12, 9)
    records, seen = itch_records(str(feed))
    rows = random_orders(records, sorted(seen)[:3] + ["NOPE"], 150, 9, 100, 200_000_000)
    table = orders_table(rows)
    full = simulate(str(feed), table, format="itch", workers=2, latency="lat")
    only = simulate(str(feed), table, format="itch", workers=2, latency="lat", feed_tables=())
    assert full.fills.num_rows > 0 and only.names == ("fills", "events", "summary", "bbo_with_own")
    for t in only.names:
        assert only.table(t).equals(full.table(t)), t


def test_simulate_itch_many_own_orders_one_book_matches_reference(tmp_path):
    """Many own orders in one book: several at one price (their own time priority),
    crossing orders consuming what earlier ones left, feed adds through resting ones."""
    feed = tmp_path / "day.itch"
    write_itch(feed, 20_000, 2, 11)
    records, seen = itch_records(str(feed))
    rows = random_orders(records, sorted(seen)[:1], 600, 11, 100, 50_000_000)
    r = check(str(feed), "itch", records, seen, rows, 1)
    assert r.fills.num_rows > 50
    assert set(r.fills.column("liquidity").to_pylist()) == {"maker", "taker"}


@pytest.mark.parametrize("fmt", ["itch", "csv"])
def test_simulate_depth_with_own_no_own_order_equals_feed_depth(tmp_path, fmt):
    """Instruments whose instructions are all rejected (nothing rests, nothing is consumed):
    depth_with_own is the feed's depth of those instruments row for row, any workers; with
    no instructions at all it is empty."""
    feed = tmp_path / f"day.{fmt}"
    (write_itch if fmt == "itch" else write_csv)(feed, 20_000, 6, 8)
    records, seen = (itch_records if fmt == "itch" else csv_records)(str(feed))
    tickers = sorted(seen)[:3]
    t0, t1 = records[0][1], records[-1][1]
    rows = [dict(time=t0 + (t1 - t0) * i // 30, instrument=tickers[i % 3], order_id=i + 1,
                 action="cancel" if i % 2 else "new", side="buy", type="limit", tif="GTC", price=100,
                 quantity=None if i % 2 else 0, lat=0) for i in range(30)]
    table = orders_table(rows)
    level_cols = [f"{s}_{c}_{k}" for s in ("bid", "ask") for k in range(1, 6) for c in ("px", "qty", "orders")]
    for workers in (1, 2, 3):
        r = simulate(str(feed), table, format=fmt, workers=workers, feed_tables=("depth",), own_tables=OWN, levels=5)
        assert set(r.events.column("event").to_pylist()) == {"rejected"}
        depth = r.depth.filter(pa.compute.is_in(r.depth["ticker"], value_set=pa.array(tickers)))
        want = [(d["seq"], d["time"], d["ticker"]) + tuple(d[c] for c in level_cols) for d in depth.to_pylist()]
        got = [(d["seq"], d["time"], d["instrument"]) + tuple(d[c] for c in level_cols)
               for d in r.depth_with_own.to_pylist()]
        assert len(want) > 100 and got == want
    empty = pa.table({"instrument": pa.array([], pa.string()), "action": pa.array([], pa.string())})
    none = simulate(str(feed), empty, format=fmt, workers=2, own_tables=OWN, levels=5)
    assert none.depth_with_own.num_rows == 0
    assert none.depth_with_own.schema.names[3:] == level_cols


def test_simulate_deep_book_sweeps_past_the_best_levels_matches_reference(tmp_path):
    """A book deeper than the levels the shadow keeps next to the touch (300 levels a side):
    own orders that walk far past the best levels (a market buy through most asks, an FOK
    sell that needs 200 bid levels, one that cannot fill, a limit buy deep through the
    rest), own orders resting far from the touch, then feed deletes that empty the best
    levels and executions at the far ones; every table matches the reference."""
    lines, t, oid = ["Time,Ticker,Order,T,Shares,Price,MPID,X"], 34_200_000, 0
    for k in range(300):
        for side, price in (("S", 1_000_000 + 100 * k), ("B", 999_900 - 100 * k)):
            oid, t = oid + 1, t + 1
            lines.append(f"{t},DEEP,{oid},{side},{100 + k},{price},,")
    adds = t
    for k in range(0, 600, 3):          # every third order goes: the best levels empty, far ones move up
        t += 2
        lines.append(f"{t},DEEP,{k + 1},D,0,0,,")
    for k in (k for k in range(1, 600, 7) if k % 3):    # executions (some at levels your orders emptied)
        t += 2
        lines.append(f"{t},DEEP,{k + 1},E,50,0,,")
    feed = tmp_path / "deep.csv"
    feed.write_text("\n".join(lines) + "\n")
    records, seen = csv_records(str(feed))

    def order(at, oid, side, qty, price=None, tif="GTC", kind="limit", action="new"):
        return dict(time=at, instrument="DEEP", order_id=oid, action=action, side=side, type=kind, tif=tif,
                    price=price, quantity=qty, lat=0)
    asks = sum(100 + k for k in range(250))
    rows = [order(adds + 1, 1, "buy", asks, kind="market", tif="IOC"),
            order(adds + 1, 2, "sell", sum(100 + k for k in range(200)), price=999_900 - 100 * 220, tif="FOK"),
            order(adds + 1, 3, "sell", 10 ** 6, price=1, tif="FOK"),
            order(adds + 1, 4, "buy", 5_000, price=1_000_000 + 100 * 280),
            order(adds + 1, 5, "sell", 70, price=1_000_000 + 100 * 290),
            order(adds + 1, 6, "buy", 80, price=999_900 - 100 * 260),
            order(adds + 3, 6, "", 40, action="modify"),
            order(t + 1, 7, "buy", 10 ** 5, kind="market", tif="IOC")]
    r = check(str(feed), "csv", records, seen, rows, 1_000_000)
    kinds = r.events.column("event").to_pylist()
    assert r.fills.num_rows > 400 and "rejected" in kinds and "rested" in kinds
