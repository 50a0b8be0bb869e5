"""Ticker pushdown: a replay of some tickers skips the other books' records and
gives exactly the rows of the full replay filtered by ticker — Python, DuckDB, polars."""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

import obook
from obook._kernels import itch as K
from obook._kernels.layout import EV_WIDTH
from obook.gen.csv import write_csv
from obook.gen.itch import write_itch
from tests.frontend_feeds import add, directory, write_feed


@pytest.fixture(scope="module")
def itch_day(tmp_path_factory):
    path = tmp_path_factory.mktemp("push") / "day.itch"
    write_itch(path, 30000, 40, seed=5)
    return path


@pytest.fixture(scope="module")
def csv_day(tmp_path_factory):
    path = tmp_path_factory.mktemp("push") / "day.csv"
    write_csv(path, 8000, 12, seed=5)
    return path


def _filtered(table: pa.Table, tickers) -> pa.Table:
    return table.filter(pc.is_in(table["ticker"], value_set=pa.array(sorted(tickers))))


def _two_tickers(table: pa.Table) -> list[str]:
    names = sorted(set(table["ticker"].to_pylist()))
    return [names[1], names[-2]]


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("table", ["bbo", "trades", "orders", "depth"])
def test_python_tables_tickers_itch_equal_filtered_full_replay(itch_day, table, workers):
    full = getattr(obook, table)(itch_day, workers=1).read_all()
    tickers = _two_tickers(full)
    got = getattr(obook, table)(itch_day, workers=workers, tickers=tickers).read_all()
    expected = _filtered(full, tickers)
    assert expected.num_rows > 0
    assert got.equals(expected)


@pytest.mark.parametrize("workers", [1, 2])
def test_python_bbo_tickers_csv_equal_filtered_full_replay(csv_day, workers):
    full = obook.bbo(csv_day, workers=1).read_all()
    tickers = _two_tickers(full)
    got = obook.bbo(csv_day, workers=workers, tickers=",".join(tickers)).read_all()
    assert got.num_rows > 0 and got.equals(_filtered(full, tickers))


def test_python_bbo_ticker_not_in_feed_raises_after_rows(itch_day):
    full = obook.bbo(itch_day, workers=1).read_all()
    known = _two_tickers(full)[0]
    batches = []
    with pytest.raises(obook.ObookError, match="not in the feed: ZZZZ"):
        for b in obook.bbo(itch_day, workers=2, tickers=[known, "ZZZZ"]):
            batches.append(b)
    assert pa.Table.from_batches(batches, schema=full.schema).equals(_filtered(full, [known]))


def test_duckdb_obook_bbo_tickers_equal_filtered_full_replay(itch_day):
    con = obook.connect()
    full = con.sql(f"SELECT * FROM obook_bbo('{itch_day}', workers := 1)").arrow()
    full = full.read_all() if hasattr(full, "read_all") else full
    tickers = _two_tickers(full)
    got = con.sql(f"SELECT * FROM obook_bbo('{itch_day}', workers := 2, tickers := {tickers!r})").arrow()
    got = got.read_all() if hasattr(got, "read_all") else got
    assert got.num_rows > 0 and got.equals(_filtered(full, tickers))
    with pytest.raises(Exception, match="not in the feed"):
        con.sql(f"SELECT count(*) FROM obook_depth('{itch_day}', tickers := ['ZZZZ'])").fetchall()


def test_polars_scan_predicate_ticker_pushed_down_same_rows(itch_day, monkeypatch):
    from obook.engine import replay as R

    full = pl.from_arrow(obook.bbo(itch_day, workers=1).read_all())
    a, b = _two_tickers(full.to_arrow())
    seen = []
    original = R.Replay.__init__

    def spy(self, *args, **kwargs):
        seen.append(kwargs.get("tickers"))
        original(self, *args, **kwargs)
    monkeypatch.setattr(R.Replay, "__init__", spy)
    for pred, wanted in ((pl.col("ticker") == a, [a]), (pl.col("ticker").is_in([a, b]), [a, b]),
                         ((pl.col("ticker") == b) & (pl.col("seq") > 100), [b]),
                         ((pl.col("ticker") == a) | (pl.col("ticker") == b), [a, b])):
        seen.clear()
        got = obook.scan_bbo(itch_day, workers=2).filter(pred).collect()
        assert got.equals(full.filter(pred)), pred
        assert sorted(seen[-1]) == sorted(wanted), pred
    seen.clear()
    got = obook.scan_bbo(itch_day, workers=1).filter(pl.col("bid_px") > 0).collect()
    assert seen[-1] is None and got.equals(full.filter(pl.col("bid_px") > 0))
    assert obook.scan_bbo(itch_day).filter(pl.col("ticker") == "ZZZZ").collect().height == 0


def test_polars_scan_tickers_and_predicate_on_ticker_intersect(itch_day):
    full = pl.from_arrow(obook.bbo(itch_day, workers=1).read_all())
    names = sorted(set(full["ticker"]))
    a, b, c = names[1], names[2], names[3]
    for tickers in ([a, b], f"{a},{b}"):
        lf = obook.scan_bbo(itch_day, workers=1, tickers=tickers)
        assert lf.filter(pl.col("ticker") == c).collect().height == 0
        got = lf.filter(pl.col("ticker").is_in([a, c])).collect()
        assert got.height > 0 and got.equals(full.filter(pl.col("ticker") == a))


def test_cli_convert_ticker_not_in_feed_warns_exit_0(itch_day, tmp_path):
    from obook.cli import app

    r = CliRunner().invoke(app, ["convert", str(itch_day), str(tmp_path), "--tickers", "ZZZZ"])
    assert r.exit_code == 0, r.output
    assert obook.convert  # the files are written (empty) and the warning names the ticker
    assert (tmp_path / "bbo.parquet").exists()


def test_cli_convert_ticker_not_in_feed_logs_warning(itch_day, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="obook"):
        obook.convert(itch_day, tmp_path, tickers="ZZZZ", unknown_tickers="warn")
    assert "not in the feed: ZZZZ" in caplog.text
    with pytest.raises(obook.ObookError, match="ZZZZ"):
        obook.convert(itch_day, tmp_path / "strict", tickers="ZZZZ")


def _decode(buf, keep, wanted):
    ev = np.zeros((8, EV_WIDTH), np.int64)
    names = np.zeros((8, 2), np.int64)
    return K.itch_decode.py_func(buf, 1, 0, K.owners(1), K.SIZES, ev, names, False, keep, wanted), ev


def test_itch_decode_wanted_skips_other_locates_py_func(tmp_path):
    msgs = [directory(1, 1, "AAA"), directory(1, 2, "BBB"), add(2, 1, 10, "B", 100, "AAA", 5000),
            add(3, 2, 11, "S", 100, "BBB", 6000), add(4, 3, 12, "S", 100, "CCC", 7000)]
    buf = np.frombuffer(write_feed(tmp_path / "f.itch", msgs).read_bytes(), np.uint8)
    wanted = np.array([int.from_bytes(b"BBB     ", "big")], np.int64)
    keep = np.zeros(1 << 16, np.uint8)
    (ne, nn, _), ev = _decode(buf, keep, wanted)
    assert ne == 1 and ev[0, 0] == 4 and ev[0, 2] == 2 and nn == 1     # record 4, locate 2
    assert keep[1] == 0 and keep[2] == 1 and keep[3] == 0
    (ne, nn, _), _ = _decode(buf, np.ones(1 << 16, np.uint8), np.zeros(0, np.int64))
    assert ne == 3 and nn == 2                                          # no selection: every book


@pytest.mark.parametrize("n_workers", [1, 2, 3, 8, 64])
def test_itch_owners_table_equals_owner_of_every_locate(n_workers):
    table = K.owners(n_workers)
    assert table.shape == (1 << 16,) and table.dtype == np.uint8
    assert all(int(table[loc]) == K.owner_of(loc, n_workers) for loc in range(0, 1 << 16, 7))
    assert int(table[65535]) == K.owner_of(65535, n_workers)
    if n_workers > 1:   # every worker owns some locates
        assert set(np.unique(table)) == set(range(n_workers))


def test_itch_decode_two_workers_split_every_locate_once_py_func(tmp_path):
    msgs = [directory(1, loc, f"S{loc}") for loc in range(1, 40)]
    msgs += [add(2, loc, 100 + loc, "B", 100, f"S{loc}", 5000) for loc in range(1, 40)]
    buf = np.frombuffer(write_feed(tmp_path / "f.itch", msgs).read_bytes(), np.uint8)
    seen = []
    for w in range(2):
        ev = np.zeros((80, EV_WIDTH), np.int64)
        names = np.zeros((80, 2), np.int64)
        for kernel in (K.itch_decode, K.itch_decode.py_func):
            ne, nn, _ = kernel(buf, 1, w, K.owners(2), K.SIZES, ev, names, False,
                            np.ones(1 << 16, np.uint8), np.zeros(0, np.int64))
            locs = sorted(int(x) for x in ev[:ne, 2])
            assert locs == sorted(int(x) for x in names[:nn, 0])
            assert all(K.owner_of(loc, 2) == w for loc in locs)
        seen += locs
    assert sorted(seen) == list(range(1, 40))
