"""The analytics on every format against a plain reference written from their docs (exact
decimals): spread (spread, mid), twas, the BBO grid and bars in SQL, Python and polars, on
generated Databento, Shanghai, Shenzhen, CSV, ITCH and PITCH days."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import obook
from test_tables_registry import DAYS

FORMATS = ("databento", "sse", "szse", "csv", "itch", "pitch")
SENTINEL = (1 << 63) - 1


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    out = {}
    for fmt in FORMATS:
        name, write = DAYS[fmt]
        path = tmp_path_factory.mktemp(fmt) / name
        write(path)
        out[fmt] = path
    return out


@pytest.fixture(scope="module")
def con():
    c = obook.connect()
    yield c
    c.close()


def _bbo(path):
    t = obook.bbo(path, workers=1).read_all()
    return t.to_pylist(), int(t.schema.metadata[b"obook.price_scale"])


# --------------------------------------------------------------------------- the reference


def ref_spread(rows, scale):
    """spread = (ask - bid) / price_scale; mid = (bid + ask) / 2 / price_scale (null with a side empty)."""
    out = []
    for r in rows:
        b, a = r["bid_px"], r["ask_px"]
        if b is None or a is None:
            out.append((r["seq"], None, None))
        else:
            out.append((r["seq"], Decimal(a - b) / scale, Decimal(a + b) / 2 / scale))
    return out


def ref_twas(rows, scale):
    """Per ticker: each row's spread holds until the ticker's next row, the last until the
    feed's last BBO time; weighted by those durations over the rows with both sides."""
    end = max(r["time"] for r in rows)
    by = {}
    for r in sorted(rows, key=lambda r: r["seq"]):
        by.setdefault(r["ticker"], []).append(r)
    out = {}
    for ticker, rs in by.items():
        num = den = 0
        for i, r in enumerate(rs):
            nxt = rs[i + 1]["time"] if i + 1 < len(rs) else end
            dur = max(0, min(nxt, end) - r["time"])
            if r["bid_px"] is not None and r["ask_px"] is not None:
                num += (r["ask_px"] - r["bid_px"]) * dur
                den += dur
        out[ticker] = None if den == 0 else float(num) / float(den) / scale
    return out


def ref_grid(rows, every):
    """The last BBO (greatest time, then seq) at or before each grid point, per ticker."""
    t0 = -(-min(r["time"] for r in rows) // every) * every
    t1 = max(r["time"] for r in rows)
    out = []
    for ticker in sorted({r["ticker"] for r in rows}):
        mine = sorted((r for r in rows if r["ticker"] == ticker), key=lambda r: (r["time"], r["seq"]))
        for g in range(t0, t1 + 1, every):
            before = [r for r in mine if r["time"] <= g]
            q = before[-1] if before else None
            out.append((g, ticker, q and q["bid_px"], q and q["ask_px"], q and q["seq"]))
    return out


def ref_bars(trades, step):
    """OHLCV per ticker and bar of the trades with a price that are not broken."""
    bars = {}
    for t in sorted(trades, key=lambda t: t["seq"]):
        if t["price"] is None or t["broken"]:
            continue
        key = (t["ticker"], t["time"] // step * step)
        b = bars.setdefault(key, {"o": t["price"], "h": t["price"], "l": t["price"], "v": 0, "to": 0, "n": 0})
        b["h"], b["l"], b["c"] = max(b["h"], t["price"]), min(b["l"], t["price"]), t["price"]
        b["v"] += t["shares"]
        b["to"] += t["price"] * t["shares"]
        b["n"] += 1
    return [(k[0], k[1], b["o"], b["h"], b["l"], b["c"], b["v"], Decimal(b["to"]), b["to"] / b["v"], b["n"])
            for k, b in sorted(bars.items())]


# --------------------------------------------------------------------------- the comparisons


@pytest.mark.parametrize("fmt", FORMATS)
def test_obook_spread_and_mid_equal_the_reference_exactly(days, con, fmt):
    rows, scale = _bbo(days[fmt])
    got = con.sql(f"SELECT seq, spread, mid FROM obook_spread('{days[fmt]}', workers := 1) ORDER BY seq").fetchall()
    assert len(rows) > 50
    assert got == ref_spread(sorted(rows, key=lambda r: r["seq"]), scale)


@pytest.mark.parametrize("fmt", FORMATS)
def test_obook_twas_equals_the_reference(days, con, fmt):
    rows, scale = _bbo(days[fmt])
    got = dict(con.sql(f"SELECT ticker, twas FROM obook_twas('{days[fmt]}', workers := 1)").fetchall())
    want = ref_twas(rows, scale)
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12, abs=0) if want[k] is not None else got[k] is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_obook_bbo_grid_equals_the_reference(days, con, fmt):
    rows, _ = _bbo(days[fmt])
    span = max(r["time"] for r in rows) - min(r["time"] for r in rows)
    every = max(1, span // 40)
    got = con.sql(f"SELECT time, ticker, bid_px, ask_px, quote_seq FROM obook_bbo_grid('{days[fmt]}', {every}, "
                  "workers := 1) ORDER BY ticker, time").fetchall()
    assert got == ref_grid(rows, every)


@pytest.mark.parametrize("fmt", FORMATS)
def test_bars_equal_the_reference_in_sql_python_and_polars(days, con, fmt):
    path = days[fmt]
    trades = obook.trades(path, workers=1).read_all()
    unit = obook.feeds.get_format(fmt).time_unit_ns
    want = ref_bars(trades.to_pylist(), 60 * 10**9 // unit)
    cols = "ticker, start, open, high, low, close, volume, turnover, vwap, trades"
    names = cols.split(", ")        # (not `timestamp`, which follows `start` when the session date is known)
    assert [tuple(r.values()) for r in obook.bars(path, "1 minute", workers=1).read_all().select(names)
            .to_pylist()] == want
    assert con.sql(f"SELECT {cols} FROM obook_bars('{path}', interval := '1 minute', workers := 1)").fetchall() == want
    assert obook.scan_bars(path, workers=1).select(names).collect().rows() == want
    # volume is the executed shares; no sentinel price anywhere
    printed = [t for t in trades.to_pylist() if t["price"] is not None and not t["broken"]]
    assert sum(b[6] for b in want) == sum(t["shares"] for t in printed) > 0
    assert max(t["price"] for t in printed) < SENTINEL
    assert con.sql(f"SELECT max(price) FROM obook_trades('{path}', workers := 1)").fetchall()[0][0] < SENTINEL


@pytest.mark.parametrize("fmt", FORMATS)
def test_spread_twas_grid_equal_the_reference_in_python_polars_and_sql(days, con, fmt):
    rows, scale = _bbo(days[fmt])
    path = days[fmt]
    want = ref_spread(sorted(rows, key=lambda r: r["seq"]), scale)
    for front, got in _fronts_with(con, "spread", path).items():
        assert [(r["seq"], r["spread"], r["mid"]) for r in sorted(got, key=lambda r: r["seq"])] == want, front
    twas = ref_twas(rows, scale)
    fronts = _fronts_with(con, "twas", path)
    assert fronts["python"] == fronts["polars"] == fronts["sql"]
    got = {r["ticker"]: r["twas"] for r in fronts["python"]}
    assert got.keys() == twas.keys()
    assert all(got[k] == pytest.approx(twas[k], rel=1e-12, abs=0) if twas[k] is not None else got[k] is None
               for k in twas)
    span = max(r["time"] for r in rows) - min(r["time"] for r in rows)
    every = max(1, span // 40)
    grid = ref_grid(rows, every)
    fronts = _fronts_with(con, "bbo_grid", path, (every,))
    for front, got in fronts.items():
        assert [(r["time"], r["ticker"], r["bid_px"], r["ask_px"], r["quote_seq"]) for r in got] == grid, front
    assert fronts["python"] == fronts["polars"] == fronts["sql"]
    py = obook.bbo_grid(path, every, workers=1).read_all()
    sql = con.sql(f"SELECT * FROM obook_bbo_grid('{path}', {every}, workers := 1)").to_arrow_table()
    assert py.schema.names == sql.schema.names
    if "timestamp" in py.schema.names:      # a session date known: each grid point's instant
        stamps = py.column("timestamp").cast(pa.int64()).to_pylist()
        assert stamps == sql.column("timestamp").cast(pa.int64()).to_pylist()
        unit = obook.feeds.get_format(fmt).time_unit_ns
        assert len({s - t * unit for s, t in zip(stamps, py.column("time").to_pylist())}) == 1


def test_twas_and_grid_windows_agree_with_sql(days, con):
    path = days["itch"]
    rows, _ = _bbo(path)
    t0, t1 = sorted(r["time"] for r in rows)[len(rows) // 3], sorted(r["time"] for r in rows)[2 * len(rows) // 3]
    for name, args in (("twas", ()), ("bbo_grid", ((t1 - t0) // 7,))):
        fronts = _fronts_with(con, name, path, args, start_time=t0, end_time=t1)
        assert fronts["python"] == fronts["polars"] == fronts["sql"] and fronts["python"], name
    for every in (0, 1 << 63, 1 << 64):
        with pytest.raises(obook.ObookError, match=r"every must be a positive integer up to 2\^63 - 1"):
            obook.bbo_grid(path, every).read_all()
        with pytest.raises(duckdb.Error, match=r"every must be a positive integer up to 2\^63 - 1"):
            con.execute(f"SELECT * FROM obook_bbo_grid('{path}', every := {every})").fetchall()


def _fronts_with(con, name, path, args=(), **options):
    """Table ``name`` of the Python function, the polars scan and the SQL macro, as row dicts
    without `timestamp`; the options given to each front end in its own spelling."""
    sql_path = "[" + ", ".join(f"'{p}'" for p in path) + "]" if isinstance(path, list) else f"'{path}'"
    sql_opts = "".join(f", {a}" for a in args) + "".join(
        f", {k} := {repr(v) if isinstance(v, str) else str(v).lower()}" for k, v in options.items())
    got = {"python": getattr(obook, name)(path, *args, workers=1, **options).read_all().to_pylist(),
           "polars": getattr(obook, f"scan_{name}")(path, *args, workers=1, **options).collect().to_dicts(),
           "sql": con.sql(f"SELECT * FROM obook_{name}({sql_path}{sql_opts}, workers := 1)").to_arrow_table()
           .to_pylist()}
    # timestamp: the same instants, but Python objects of different precision (polars: us)
    return {k: [{c: v for c, v in r.items() if c != "timestamp"} for r in rows] for k, rows in got.items()}


def _grid_step(path):
    rows, _ = _bbo(path)
    return max(1, (max(r["time"] for r in rows) - min(r["time"] for r in rows)) // 40)


@pytest.mark.parametrize("fmt", FORMATS)
def test_sql_macros_take_prices_and_filename_like_python_and_polars(days, con, fmt):
    path = days[fmt]
    rows, scale = _bbo(path)
    want = ref_spread(sorted(rows, key=lambda r: r["seq"]), scale)
    for prices in ("decimal", "float"):
        fronts = _fronts_with(con, "spread", path, prices=prices, filename=True)
        assert fronts["python"] == fronts["polars"] == fronts["sql"], prices
        got = sorted(fronts["sql"], key=lambda r: r["seq"])
        assert [(r["seq"], r["spread"], r["mid"]) for r in got] == want          # the same exact spread
        assert {r["filename"] for r in got} == {str(path)}
        first = next(r for r in got if r["bid_px"] is not None)
        raw = next(r for r in sorted(rows, key=lambda r: r["seq"]) if r["bid_px"] is not None)
        expect = Decimal(raw["bid_px"]) / scale
        assert (first["bid_px"] == expect) if prices == "decimal" else first["bid_px"] == pytest.approx(float(expect))
        assert list(fronts["sql"][0])[-1] == "filename"
    twas = _fronts_with(con, "twas", path, prices="decimal", filename=True)
    assert twas["python"] == twas["polars"] == twas["sql"] and twas["sql"][0]["filename"] == str(path)
    grid = _fronts_with(con, "bbo_grid", path, (_grid_step(path),), prices="decimal", filename=True)
    assert grid["python"] == grid["polars"] == grid["sql"] and list(grid["sql"][0])[-1] == "filename"
    plain = _fronts_with(con, "bbo_grid", path, (_grid_step(path),))
    assert [{k: v for k, v in r.items() if k != "filename"} for r in grid["sql"]] != plain["sql"] or scale == 1
    assert "filename" not in plain["sql"][0]


def test_sql_macros_on_several_files_analyse_each_file_alone(days, con, tmp_path):
    from test_tables_registry import DAYS

    name, write = DAYS["itch"]
    second = tmp_path / ("b_" + name)
    write(second)
    files = sorted([str(days["itch"]), str(second)])
    one = {f: _fronts_with(con, "twas", f)["sql"] for f in files}
    both = _fronts_with(con, "twas", files, filename=True)
    assert both["python"] == both["polars"] == both["sql"]
    for f in files:
        assert [{k: v for k, v in r.items() if k != "filename"} for r in both["sql"] if r["filename"] == f] == one[f]
    every = _grid_step(files[0])
    grids = _fronts_with(con, "bbo_grid", files, (every,), filename=True)
    assert grids["python"] == grids["polars"] == grids["sql"]
    assert {r["filename"] for r in grids["sql"]} == set(files)


def test_sql_macros_take_every_option_of_their_registry_table(days, con):
    from obook.tables import tables

    params = {}
    for name, p in con.sql("SELECT function_name, parameters FROM duckdb_functions() "
                           "WHERE function_name IN ('obook_spread', 'obook_twas', 'obook_bbo_grid')").fetchall():
        params[name] = set(p)
    for name in ("spread", "twas", "bbo_grid"):
        assert set(tables()[name].all_options()) <= params[f"obook_{name}"], name
    with pytest.raises(Exception, match="prices must be one of"):
        con.sql(f"SELECT * FROM obook_spread('{days['itch']}', prices := 'cents')").fetchall()


@pytest.mark.parametrize(("options", "says"), [
    (dict(every=1.5), "every must be an integer, not 1.5"),
    (dict(every="5"), "every must be an integer, not '5'"),
    (dict(every=True), "every must be an integer, not True"),
    (dict(every=10, start_time=2.5), "start_time must be an integer, not 2.5"),
    (dict(every=10, end_time=float("nan")), "end_time must be an integer, not nan"),
    # integers only, as workers and levels: a float equal to one is an error too
    (dict(every=1e9), "every must be an integer, not 1000000000.0"),
    (dict(every=10, start_time=0.0), "start_time must be an integer, not 0.0"),
    (dict(every=Decimal(10)), "every must be an integer, not Decimal\\('10'\\)"),
])
def test_bbo_grid_fractional_or_text_option_is_an_error_not_rounded(days, options, says):
    with pytest.raises(obook.ObookError, match=says):
        obook.bbo_grid(days["itch"], workers=1, **options).read_all()


@pytest.mark.parametrize(("options", "says"), [
    (dict(start_time="abc"), "twas: start_time must be an integer, not 'abc'"),
    (dict(end_time=1.5), "twas: end_time must be an integer, not 1.5"),
    (dict(end_time=5.0), "twas: end_time must be an integer, not 5.0"),
    (dict(start_time=-5), "twas: start_time must be a feed time from 0 to 2\\^63 - 1, not -5"),
    (dict(end_time=1 << 64), "twas: end_time must be a feed time from 0 to 2\\^63 - 1"),
])
def test_twas_text_fractional_or_negative_time_is_an_obook_error_naming_it(days, options, says):
    with pytest.raises(obook.ObookError, match=says):
        obook.twas(days["itch"], workers=1, **options).read_all()
    with pytest.raises(obook.ObookError, match=says):
        obook.scan_twas(days["itch"], workers=1, **options).collect()


def test_bbo_grid_negative_start_time_is_an_obook_error_not_wrapped_times(days):
    with pytest.raises(obook.ObookError, match="bbo_grid: start_time must be a feed time from 0"):
        obook.bbo_grid(days["itch"], workers=1, every=10**9, start_time=-2 * 10**9).read_all()


def test_bbo_grid_numpy_integer_options_equal_the_integers(days):
    t0 = obook.bbo(days["itch"], workers=1).read_all().column("time")[0].as_py()
    exact = obook.bbo_grid(days["itch"], workers=1, every=10**9, start_time=t0).read_all()
    assert exact.num_rows > 0
    assert obook.bbo_grid(days["itch"], workers=1, every=np.int64(10**9), start_time=np.uint64(t0)).read_all() == exact


@pytest.mark.parametrize("fmt", FORMATS)
def test_bars_turnover_and_vwap_in_the_prices_unit_when_prices_are_decimal_or_float(days, con, fmt):
    ints = obook.bars(days[fmt], workers=1).read_all()
    scale = int(ints.schema.metadata[b"obook.price_scale"])
    assert ints.num_rows > 0 and scale > 1
    want = [Decimal(t) / scale for t in ints.column("turnover").to_pylist()]
    dec = obook.bars(days[fmt], workers=1, prices="decimal").read_all()
    assert dec.column("turnover").to_pylist() == want
    assert dec.schema.field("turnover").type.scale == len(str(scale)) - 1
    flt = obook.bars(days[fmt], workers=1, prices="float").read_all()
    assert flt.column("turnover").to_pylist() == pytest.approx([float(w) for w in want], rel=1e-12)
    for t in (dec, flt):
        assert t.column("vwap").to_pylist() == pytest.approx(
            [float(x) / v for x, v in zip(want, ints.column("volume").to_pylist())], rel=1e-12)
    sql = con.execute(f"SELECT turnover FROM obook_bars('{days[fmt]}', prices := 'decimal')").fetchall()
    assert [r[0] for r in sql] == want


@pytest.mark.parametrize("workers", [1, 2])
def test_spread_feed_cut_short_rows_before_the_cut_then_its_error(tmp_path, workers):
    """spread is each BBO row's own: it streams, so a bad record ends it after the rows
    before it, as the BBO does (twas, bbo_grid and bars need the whole day first)."""
    import obook.polars
    from obook.gen.itch import write_itch
    from hostile_support import batches_until_error

    day = tmp_path / "day.itch"
    write_itch(day, 400_000, 8, seed=3)
    cut = tmp_path / "cut.itch"
    data = day.read_bytes()
    cut.write_bytes(data[:len(data) * 9 // 10])
    whole = obook.spread(day, workers=workers).read_all()
    bbo_batches, bbo_error = batches_until_error(obook.bbo(cut, workers=workers))
    got, error = batches_until_error(obook.spread(cut, workers=workers))
    assert isinstance(error, obook.TruncatedFeedError) and str(error) == str(bbo_error)
    rows = sum(b.num_rows for b in got)
    assert rows == sum(b.num_rows for b in bbo_batches) > 0
    assert pa.Table.from_batches(got).equals(whole.slice(0, rows))


def test_twas_feed_time_stepping_back_counts_that_step_as_no_time(tmp_path):
    path = tmp_path / "back.csv"
    path.write_text("Time,Ticker,Order,T,Shares,Price\n1000,AAA,a,S,100,1000\n2000,AAA,b,B,100,900\n"
                    "120000,AAA,c,B,100,950\n60500,AAA,d,S,10,950\n")
    assert obook.bbo(str(path)).read_all()["time"].to_pylist() == [1000, 2000, 120000, 60500]   # as given
    got = obook.twas(str(path)).read_all().to_pylist()[0]
    # spread 100 from 2000 to 120000; the 50 quoted at 120000 lasts no time (the next row is
    # earlier); the crossed 0 from 60500 lasts to the last time, 120000
    assert got["quoted_time"] == 118_000 + 59_500
    assert got["twas_ticks"] == 100 * 118_000 / (118_000 + 59_500)
    assert (got["min_spread_ticks"], got["max_spread_ticks"]) == (0, 100)
