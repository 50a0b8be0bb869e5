"""bars (Python and the SQL macro, every format) and the audit through DuckDB and polars."""

from __future__ import annotations

import pyarrow as pa
import pytest

import obook
from obook.errors import ObookError
from obook.gen.csv import write_csv
from obook.gen.sse import write_sse
from obook.gen.szse import write_szse
from obook.klines import interval_ns


def reference_bars(trades: pa.Table, step: int) -> list[dict]:
    """Bars by a plain loop over the printed trades (feed order)."""
    bars: dict[tuple, dict] = {}
    for r in trades.to_pylist():
        if r["price"] is None or r["broken"]:
            continue
        key = (r["ticker"], r["time"] // step * step)
        b = bars.get(key)
        if b is None:
            b = bars[key] = {"ticker": key[0], "start": key[1], "open": r["price"], "high": r["price"],
                             "low": r["price"], "close": 0, "volume": 0, "turnover": 0, "trades": 0}
        b["high"], b["low"], b["close"] = max(b["high"], r["price"]), min(b["low"], r["price"]), r["price"]
        b["volume"] += r["shares"]
        b["turnover"] += r["price"] * r["shares"]
        b["trades"] += 1
    out = [bars[k] for k in sorted(bars)]
    for b in out:
        b["vwap"] = b["turnover"] / b["volume"]
    return out


@pytest.fixture(scope="module")
def feeds(tmp_path_factory):
    d = tmp_path_factory.mktemp("l2tables")
    write_szse(d / "sz.log", 8000, 4, 2)
    write_sse(d / "sh.log", 4000, 3, 2)
    write_csv(d / "us.csv", 20000, 5, 2)
    return {"szse": (d / "sz.log", 1), "sse": (d / "sh.log", 1), "csv": (d / "us.csv", 10**6)}


@pytest.mark.parametrize("fmt", ["szse", "sse", "csv"])
def test_bars_every_format_equals_reference_and_sql(feeds, fmt):
    path, unit_ns = feeds[fmt]
    step = 60 * 10**9 // unit_ns
    got = obook.bars(path, "1 minute", workers=1).read_all()
    ref = reference_bars(obook.trades(path, workers=1).read_all(), step)
    assert len(ref) > 3
    cols = [n for n in got.schema.names if n != "timestamp"]      # (Shenzhen's: its session date is known)
    assert got.select(cols).to_pylist() == [{k: b[k] for k in cols} for b in ref]
    sql = obook.connect().sql(f"SELECT * FROM obook_bars('{path}', interval := '1 minute', workers := 1)")
    assert sql.to_arrow_table().cast(got.schema).equals(got)


def test_bars_seconds_interval_more_bars(feeds):
    path = feeds["szse"][0]
    assert obook.bars(path, "1s", workers=1).read_all().num_rows > obook.bars(path, "1 minute", workers=1).read_all().num_rows


@pytest.mark.parametrize("bad", ["soon", "0 s", -5])
def test_bars_bad_interval_error(bad):
    with pytest.raises(ObookError, match="interval"):
        interval_ns(bad)


def test_audit_duckdb_and_polars_equal_python(feeds):
    path = feeds["sse"][0]
    a = obook.audit(path, workers=1).read_all()
    cont = a.filter(a["continuous"])            # (a call auction's snapshots show its uncross, not the book)
    assert cont.num_rows > 10 and all(cont["matched"].to_pylist()) and a.num_rows > cont.num_rows
    d = obook.connect().sql(f"SELECT * FROM obook_audit('{path}')").to_arrow_table()
    assert d.cast(a.schema).equals(a)
    assert obook.scan_audit(path, workers=1).collect().to_arrow().cast(a.schema).equals(a)
