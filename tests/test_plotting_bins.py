"""obook plot's arrays built while the depth and trades stream (obook.plotting_bins) equal
the whole-table computation (tests/plot_reference.py) on a day with edge cases."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from tests import plot_reference

pytest.importorskip("matplotlib")

OPEN = 34_200_000          # 09:30, milliseconds since midnight


def _day(path, seed=3):
    """A CSV day of AAA (the busiest) and BBB: random adds, cancels and trades from 09:30,
    several rows at one millisecond, a quiet stretch (empty heatmap columns), one lone row
    in a column, AAA's book empty for ten minutes, and trades after its book's last change."""
    rng = random.Random(seed)
    lines, live, ref = ["Time,Ticker,Order,T,Shares,Price"], {"AAA": {}, "BBB": {}}, 0

    def event(t, name):
        nonlocal ref
        book = live[name]
        if book and rng.random() < 0.4:
            order = rng.choice(sorted(book))
            kind = rng.choice("DC")             # (C: reduced to 1-50 shares, never removed)
            lines.append(f"{t},{name},{order},{kind},{rng.randint(1, 50) if kind == 'C' else 0},0")
            if kind == "D":
                book.pop(order)
            return
        ref += 1
        side = rng.choice("BS")
        price = 1_000_000 + (rng.randint(-6, -1) if side == "B" else rng.randint(1, 6)) * 100
        book[ref] = side
        lines.append(f"{t},{name},{ref},{side},{rng.randint(1, 9) * 100},{price}")
        if rng.random() < 0.3:
            lines.append(f"{t},{name},x{ref},T,{rng.randint(1, 5) * 100},{price}")

    t = OPEN
    for i in range(3000):
        t += rng.choice((0, 0, 1, 40, 400))
        event(t, "AAA" if rng.random() < 0.8 else "BBB")
        if i == 1000:
            t += 600_000                               # ten quiet minutes: empty columns
            event(t, "AAA")                            # one lone row
            t += 300_000
        if i == 2000:
            for order in sorted(live["AAA"]):          # AAA's book empty ...
                lines.append(f"{t},AAA,{order},D,0,0")
            live["AAA"].clear()
            t += 600_000                               # ... for ten minutes
    for k in range(3):                                 # trades after the book's last change
        t += 5_000
        lines.append(f"{t},AAA,y{k},T,100,1000100")
    path.write_text("\n".join(lines) + "\n")
    return path


def _without_repeats(times, prices):
    """A step line's points where the price changes, and the last point."""
    same = np.r_[False, (prices[1:] == prices[:-1]) | (np.isnan(prices[1:]) & np.isnan(prices[:-1]))]
    same[-1] = False
    return times[~same], prices[~same]


@pytest.mark.parametrize("start, end", [(None, None), (OPEN + 120_000, None), (None, OPEN + 1_500_000),
                                        (OPEN + 60_000, OPEN + 2_000_000)])
def test_plotting_series_streamed_equals_whole_table_arrays(tmp_path, monkeypatch, start, end):
    monkeypatch.setenv("OBOOK_KERNELS", "python")
    from obook.plotting import _series

    feed = _day(tmp_path / "day.csv")
    args = (feed, None, start, end, "1 minute", "csv", 1, 3, None)
    new, old = _series(*args), plot_reference.series(*args)
    assert new["title"] == old["title"] == "AAA (csv)"
    for key in ("t0", "t1", "tz", "bar_width"):
        assert new[key] == old[key]
    for key in ("x", "open", "high", "low", "close", "volume"):
        np.testing.assert_array_equal(new["bars"][key], old["bars"][key])
    for key in ("grid", "prices", "times"):
        np.testing.assert_array_equal(new["heat"][key], old["heat"][key])
    assert (new["heat"]["grid"] == 0).all(axis=0).any()      # the empty book drawn as empty columns
    for side in ("bid", "ask"):
        for a, b in zip(_without_repeats(*new["best"][side]), _without_repeats(*old["best"][side])):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(new["trades"], old["trades"]):
        np.testing.assert_array_equal(a, b)


def test_plotting_bins_book_rows_in_small_batches_equal_whole_table(tmp_path, monkeypatch):
    """Batches of a few rows: a heatmap column and a millisecond cut across batches."""
    monkeypatch.setenv("OBOOK_KERNELS", "python")
    from obook.plotting import frame
    from obook.plotting_bins import BookRows

    _ticker, _fmt, _bars, depth, _trades = frame(_day(tmp_path / "day.csv"), "AAA", levels=3,
                                                                 workers=1)
    t = depth.column("time").to_numpy().astype(np.int64)
    t0, t1 = int(t[0]), int(t[-1]) + 1
    for size in (1, 7, 64):
        with BookRows(3) as book:
            for batch in depth.to_batches(max_chunksize=size):
                book.add(batch)
            grid, prices, times = book.heatmap(100.0, t0, t1)
            old = plot_reference.WholeBook(depth, 3).heatmap(100.0, t0, t1)
            for a, b in zip((grid, prices, times), old):
                np.testing.assert_array_equal(a, b)
            for side in ("bid", "ask"):
                px = depth.column(f"{side}_px_1").to_numpy(zero_copy_only=False).astype(float)
                for a, b in zip(book.best(side), _without_repeats(t, px)):
                    np.testing.assert_array_equal(a, b)
            assert book.rows == depth.num_rows and (book.first, book.last) == (t0, t1 - 1)


def test_plotting_bins_book_rows_temporary_file_has_no_name_and_closes(tmp_path, monkeypatch):
    """The rows' file is unlinked from the start (a SIGKILL leaves nothing in TMPDIR), and
    closing the book closes it."""
    import tempfile

    import pyarrow as pa

    from obook.plotting_bins import BookRows

    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill))
    batch = pa.RecordBatch.from_pydict({"time": [1, 2], "bid_px_1": [5, None], "bid_qty_1": [1, None],
                                        "ask_px_1": [7, 7], "ask_qty_1": [2, 3]})
    with BookRows(1) as book:
        book.add(batch)
        assert list(spill.iterdir()) == []
        assert book.heatmap(1.0, 1, 3)[0].sum() > 0
    assert book._file.closed and list(spill.iterdir()) == []


def _own(batch, held):
    """``batch`` in buffers of its own (a slice would keep the whole table), noted in ``held``
    with the Arrow memory allocated when it is handed out."""
    import pyarrow as pa

    batch = batch.combine_chunks().to_batches()[0] if hasattr(batch, "combine_chunks") else batch
    batch = batch.take(pa.array(np.arange(batch.num_rows)))
    held.append((pa.total_allocated_bytes(), batch.nbytes))
    return batch


@pytest.mark.parametrize("ticker", ["AAA", None])
def test_plotting_series_depth_batches_not_kept(tmp_path, monkeypatch, ticker):
    """The book's rows are let go batch by batch, from the one replay of a named ticker and
    from the book's own pass after the busiest is found: while the batches are handed out,
    the Arrow memory held grows by far less than the batches' total."""
    import pyarrow as pa

    import obook
    import obook.plotting
    from obook.plotting import _series

    monkeypatch.setenv("OBOOK_KERNELS", "python")
    held = []

    def in_fifties(table):
        for start in range(0, table.num_rows, 50):
            yield table.slice(start, 50)

    if ticker is None:
        real = obook.depth

        def depth(*args, **options):
            table = real(*args, **options).read_all()
            return pa.RecordBatchReader.from_batches(table.schema, (_own(b, held) for b in in_fifties(table)))

        monkeypatch.setattr(obook, "depth", depth)
    else:
        real = obook.plotting._both

        def both(*args, **options):
            schemas, pairs = real(*args, **options)
            pairs = list(pairs)
            depth = pa.Table.from_batches([b for name, b in pairs if name == "depth"], schemas["depth"])
            trades = [(name, b) for name, b in pairs if name == "trades"]
            return schemas, itertools.chain(trades, (("depth", _own(b, held)) for b in in_fifties(depth)))

        monkeypatch.setattr(obook.plotting, "_both", both)
    _series(_day(tmp_path / "day.csv"), ticker, None, None, "1 minute", "csv", 1, 3, None)
    total = sum(n for _, n in held)
    assert len(held) > 20 and held[-1][0] - held[0][0] < total / 4


def test_plotting_series_more_trades_than_kept_reads_the_tickers_again(tmp_path, monkeypatch):
    """A feed with more trades than obook plot keeps while it looks for the busiest ticker:
    the busiest's trades are read again (a third pass, that ticker only), the arrays the same."""
    import obook.plotting
    from obook.plotting import _series

    monkeypatch.setenv("OBOOK_KERNELS", "python")
    monkeypatch.setattr(obook.plotting, "KEEP_TRADES", 10)
    feed = _day(tmp_path / "day.csv")
    phases = []
    args = (feed, None, OPEN + 60_000, None, "1 minute", "csv", 1, 3, None)
    new = _series(*args, progress=lambda done, phase=None: phases.append(phase))
    old = plot_reference.series(*args)
    assert [p for p in phases if p in ("trades", "book")] == ["trades", "trades", "book"]
    for key in ("x", "open", "close", "volume"):
        np.testing.assert_array_equal(new["bars"][key], old["bars"][key])
    np.testing.assert_array_equal(new["heat"]["grid"], old["heat"]["grid"])
    for a, b in zip(new["trades"], old["trades"]):
        np.testing.assert_array_equal(a, b)


def test_plotting_bins_book_rows_unwritable_temporary_folder_one_line_error(tmp_path, monkeypatch):
    import tempfile

    from obook.errors import ObookError
    from obook.plotting_bins import BookRows

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    with pytest.raises(ObookError, match=r"gone: cannot write obook plot's temporary file of the book's rows \("):
        BookRows(1)


def test_plotting_bins_heatmap_auction_orders_at_the_price_limits_left_out_of_its_prices():
    """A call auction's book (a bid at the limit up, an ask at the limit down) for the first
    rows, then a book around 100: the heatmap's prices are the latter's, not 90 to 110."""
    import pyarrow as pa

    from obook.plotting_bins import heatmap

    n = 200                                              # (prices in cents, as a feed's integers)
    bid = np.r_[[11_000.0] * 5, 10_000.0 + np.arange(n - 5) % 7]
    ask = np.r_[[9_000.0] * 5, bid[5:] + 1]
    batch = pa.RecordBatch.from_pydict({"time": np.arange(n), "bid_px_1": bid, "ask_px_1": ask,
                                        "bid_qty_1": np.full(n, 100.0), "ask_qty_1": np.full(n, 100.0)})
    grid, prices, _times = heatmap([batch], 1, 100.0, 0, n)
    assert prices[0] == pytest.approx(99.995) and prices[-1] == pytest.approx(100.075)
    assert grid.sum(axis=0)[50] == 200                  # a column of the book around 100: both its sides

