"""The table registry: every (format x table x front end) cell it offers returns the Python
reader's rows on a generated day of that format; a cell it does not offer is a clear error;
many files in one call; the rendered reference is docs/tables.md."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import obook
from obook import tables as registry
from obook.errors import ObookError
from obook.gen.itch import write_itch

REPO = Path(__file__).resolve().parents[1]


def _itch(p):
    from obook.gen.itch import write_itch
    write_itch(p, 4000, 4, seed=3)


def _csv(p):
    from obook.gen.csv import write_csv
    write_csv(p, 3000, 4, seed=3)


def _dbn(p):
    from obook.gen.databento import mbo_flow, write_dbn
    write_dbn(p, mbo_flow(3000, 3, seed=3))


def _sse(p):
    from obook.gen.sse import write_sse
    write_sse(p, 3000, 3, seed=3)


def _szse(p):
    from obook.gen.szse import write_szse
    write_szse(p, 3000, 3, seed=3)


def _szse_bin(p):
    from obook.gen.szse import write_szse
    write_szse(p, 3000, 3, seed=3, binary=True)


def _pitch(p):
    from obook.gen.pitch import write_pitch
    write_pitch(p, 4000, 4, seed=3)


#: a generated day of each format with a generator: (file name, writer)
DAYS = {"pitch": ("day.pitch", _pitch), "itch": ("day.itch", _itch), "csv": ("day.csv", _csv), "databento": ("day.dbn", _dbn),
        "sse": ("day.log", _sse), "szse": ("day.log", _szse), "szse-bin": ("day.bin", _szse_bin)}
#: options that keep the cells small and deterministic
OPTIONS = {"workers": 1}


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    out = {}
    for fmt, (name, write) in DAYS.items():
        path = tmp_path_factory.mktemp(fmt.replace("-", "_")) / name
        write(path)
        out[fmt] = path
    return out


def _options(table, fmt):
    spec = registry.table(table)
    o = {"format": fmt} if "format" in spec.options else {}
    if "workers" in spec.options:
        o.update(OPTIONS)
    if "every" in spec.options:     # a one-minute grid
        o["every"] = 60 * 10**9 // obook.feeds.get_format(fmt).time_unit_ns
    return o


def _python(table, path, fmt):
    return getattr(obook, table)(path, **_options(table, fmt)).read_all()


def _duckdb(con, table, path, fmt):
    args = ", ".join([f"'{path}'"] + [f"{k} := {v!r}" for k, v in _options(table, fmt).items()])
    return con.sql(f"SELECT * FROM obook_{table}({args})").to_arrow_table()


def _polars(table, path, fmt):
    return getattr(obook, f"scan_{table}")(path, **_options(table, fmt)).collect().to_arrow()


def _command(table, path, fmt, out):
    """``obook table`` (in this process) into a Parquet file, its options as flags."""
    from typer.testing import CliRunner

    from obook.cli import app

    flags = [x for k, v in _options(table, fmt).items() for x in ("--" + k.replace("_", "-"), str(v))]
    res = CliRunner().invoke(app, ["table", table, str(path), "-o", str(out), *flags])
    assert res.exit_code == 0, res.output
    return pq.read_table(out)


def _rows(t: pa.Table):
    """The rows, timestamps as their ns since the epoch (Python datetimes hold microseconds)."""
    for i, f in enumerate(t.schema):
        if pa.types.is_timestamp(f.type):
            t = t.set_column(i, f.name, t.column(i).cast(pa.int64()))
    return t.to_pylist()


CELLS = [(f, t) for f in DAYS for t in registry.tables()]


@pytest.fixture(scope="module")
def con():
    c = obook.connect()
    yield c
    c.close()


@pytest.mark.parametrize("fmt, table", CELLS, ids=[f"{f}-{t}" for f, t in CELLS])
def test_tables_every_offered_cell_returns_the_python_readers_rows(days, con, fmt, table, tmp_path):
    path = days[fmt]
    feed_format = obook.feeds.get_format(fmt)
    if not registry.produces(feed_format, table):
        for run in (lambda: _python(table, path, fmt), lambda: _polars(table, path, fmt)):
            with pytest.raises(ObookError, match=f"no table '{table}'"):
                run()
        with pytest.raises(Exception, match=f"no table '{table}'"):
            _duckdb(con, table, path, fmt)
        return
    want = _python(table, path, fmt)
    assert want.schema.metadata[b"obook.table"] == table.encode()
    assert want.schema.metadata[b"obook.format"] == fmt.encode()
    if registry.offered(table, "duckdb"):
        assert _rows(_duckdb(con, table, path, fmt)) == _rows(want)
    else:   # an analytic: DuckDB's is the SQL macro (test_analytics_reference compares them)
        assert registry.table(table).source == "analytics"
    assert _rows(_polars(table, path, fmt)) == _rows(want)
    assert _rows(_command(table, path, fmt, tmp_path / "t.parquet")) == _rows(want)


@pytest.mark.parametrize("fmt", ["itch", "databento", "sse"])
def test_tables_convert_writes_every_table_the_format_produces(days, tmp_path, fmt):
    import pyarrow.parquet as pq

    path = days[fmt]
    names = [t for t in registry.tables_of(obook.feeds.get_format(fmt)) if registry.offered(t, "convert")]
    result = obook.convert(path, tmp_path / "out", tables=names, workers=1, format=fmt)
    for name in names:
        got = pq.read_table(result["files"][name])
        assert _rows(got) == _rows(_python(name, path, fmt)), name
        assert got.schema.metadata[b"obook.table"] == name.encode()


def test_tables_convert_refuses_a_table_the_format_does_not_produce(days, tmp_path):
    with pytest.raises(ObookError, match="no table 'mbp1'"):
        obook.convert(days["itch"], tmp_path / "out", tables="bbo,mbp1", workers=1)
    with pytest.raises(ObookError, match="table 'twas' is not offered by convert"):
        obook.convert(days["itch"], tmp_path / "out", tables="bbo,twas", workers=1)


@pytest.mark.parametrize("name", ["spread", "twas", "bbo_grid"])
def test_tables_check_offered_analytics_table_convert_lists_every_front_end_making_it(name):
    with pytest.raises(ObookError) as e:
        registry.check_offered(name, "convert")
    assert str(e.value).endswith(f"it is by: python, polars, the SQL macro obook_{name}, obook table {name}")


@pytest.mark.parametrize("reader", ["trades", "bbo"])
@pytest.mark.parametrize("stats", [None, {}])
def test_tables_unknown_option_is_a_clear_error(days, reader, stats):
    extra = {} if stats is None or reader != "bbo" else {"stats": stats}
    with pytest.raises(ObookError, match="takes no option 'levels'"):
        getattr(obook, reader)(days["itch"], levels=3, **extra)
    with pytest.raises(ObookError, match="prices must be one of int, decimal, float"):
        obook.trades(days["itch"], prices="cents")
    if stats is not None:       # options stats= cannot honour are refused, not ignored
        with pytest.raises(ObookError, match="stats= reads the feed's integer prices"):
            obook.bbo(days["itch"], stats=stats, prices="decimal")


def test_tables_required_option_missing_is_a_clear_error_and_documented(days):
    from obook.tables import reference_markdown

    with pytest.raises(ObookError, match="table 'bbo_grid' needs every: the grid step"):
        obook.bbo_grid(days["itch"])
    assert "`every` (required)" in reference_markdown()


def test_tables_reference_options_table_required_option_has_no_default():
    """The options table named the required ``every`` with a default of ``None``."""
    from obook.tables import reference_markdown

    rows = [ln for ln in reference_markdown().splitlines() if ln.startswith("| `every` |")]
    assert rows == ["| `every` | required (by `bbo_grid`) | the grid step in feed time units (a positive integer) |"]


def test_tables_units_travel_in_the_schema(days):
    scales = {"itch": "10000", "csv": "10000", "databento": "1000000000", "sse": "1000", "szse": "10000"}
    for fmt, scale in scales.items():
        md = obook.trades(days[fmt], workers=1).schema.metadata
        assert md[b"obook.price_scale"] == scale.encode(), fmt
        assert md[b"obook.price_columns"] == b"price"
    assert obook.trades(days["sse"], workers=1).schema.metadata[b"obook.quantity_scale"] == b"1000"
    assert obook.bbo(days["csv"], workers=1).schema.metadata[b"obook.time_unit"] == b"ms"
    assert obook.bbo(days["databento"], workers=1).schema.metadata[b"obook.time_origin"] == b"epoch"


def test_tables_decimal_and_float_prices_are_the_integers_scaled(days):
    from decimal import Decimal

    for fmt in ("itch", "databento", "sse"):
        raw = obook.bbo(days[fmt], workers=1).read_all()
        scale = int(raw.schema.metadata[b"obook.price_scale"])
        dec = obook.bbo(days[fmt], workers=1, prices="decimal").read_all()
        flt = obook.bbo(days[fmt], workers=1, prices="float").read_all()
        assert dec.schema.metadata[b"obook.price_scale"] == b"1"
        for r, d, f in zip(raw.column("bid_px").to_pylist(), dec.column("bid_px").to_pylist(),
                           flt.column("bid_px").to_pylist()):
            assert (r is None and d is None and f is None) or (d == Decimal(r) / scale and f == r / scale)


def test_tables_glob_over_40_days_counts_the_sum_of_single_days(tmp_path):
    from obook.gen.itch import write_itch

    folder = tmp_path / "days"
    folder.mkdir()
    singles = []
    for day in range(40):
        path = folder / f"d{day:02d}.itch"
        write_itch(path, 300, 2, seed=day)
        singles.append(obook.bbo(path, workers=1).read_all().num_rows)
    con = obook.connect()
    assert con.sql(f"SELECT count(*) FROM obook_bbo('{folder}/*.itch', workers := 1)").fetchall()[0][0] == sum(singles)
    files = con.sql(f"SELECT count(DISTINCT filename) FROM obook_bbo('{folder}/*.itch', workers := 1, "
                    "filename := true)").fetchall()[0][0]
    assert files == 40
    listed = [str(p) for p in sorted(folder.iterdir())[:3]]
    assert con.sql(f"SELECT count(*) FROM obook_bbo({listed!r}, workers := 1)").fetchall()[0][0] == sum(singles[:3])
    assert obook.scan_bbo(f"{folder}/*.itch", workers=1).collect().height == sum(singles)
    assert obook.bbo(listed, workers=1, filename=True).read_all().column("filename").to_pylist()[-1] == listed[-1]


def test_tables_list_of_feeds_of_other_units_is_a_clear_error(days, con):
    # Shanghai prices are in 1/1000 yuan, Shenzhen's in 1/10000: one table cannot hold both
    listed = [str(days["sse"]), str(days["szse"])]
    with pytest.raises(ObookError, match=r"an szse feed, whose units .* are not those of .*an sse feed"):
        obook.bbo(listed, workers=1)
    with pytest.raises(duckdb.Error, match="one table holds one set of units"):
        con.execute(f"SELECT count(*) FROM obook_spread({listed!r}, workers := 1)").fetchall()


def test_tables_list_of_a_dated_and_an_undated_file_error_names_timestamp(tmp_path):
    dated, undated = tmp_path / "12302019.NASDAQ_ITCH50", tmp_path / "plain.itch"
    write_itch(dated, 2000, 3, seed=1)
    write_itch(undated, 2000, 3, seed=2)
    first = obook.bbo(dated, workers=1).read_all().num_rows
    reader = obook.bbo([str(dated), str(undated)], workers=1)
    rows = 0
    with pytest.raises(ObookError, match=r"plain\.itch: its bbo columns differ from .*12302019\.NASDAQ_ITCH50's: "
                                         r"it lacks timestamp \(timestamp comes with a known session date"):
        for batch in reader:
            rows += batch.num_rows
    assert rows == first            # the first file's rows came before the error


def test_tables_a_glob_matching_nothing_is_a_clear_error(tmp_path):
    with pytest.raises(ObookError, match="no feed file matches"):
        obook.bbo(str(tmp_path / "*.itch"))


def test_tables_a_glob_matching_a_folder_reads_the_files_only(tmp_path, con):
    from obook.gen.pitch import write_pitch

    write_pitch(tmp_path / "a.pitch", 300, 3, seed=3)
    (tmp_path / "old.pitch").mkdir()        # a folder the pattern matches is no feed
    pattern = str(tmp_path / "*.pitch")
    rows = obook.bbo(str(tmp_path / "a.pitch"), workers=1).read_all().num_rows
    assert obook.bbo(pattern, workers=1).read_all().num_rows == rows
    assert con.execute(f"SELECT count(*) FROM obook_bbo('{pattern}', workers := 1)").fetchone()[0] == rows
    with pytest.raises(ObookError, match=r"\*\.itch: no feed file matches"):
        (tmp_path / "days.itch").mkdir()
        obook.bbo(str(tmp_path / "*.itch"))

def test_tables_a_new_format_package_is_found_by_its_folder_alone():
    from obook.feeds import packages

    found = packages()
    assert "obook.feeds.sse" in found and "obook.feeds.szse.vendor" in found
    assert "obook.feeds.orders" not in found     # no FORMAT: not a feed format


def test_tables_reference_is_docs_tables_md():
    assert (REPO / "docs" / "tables.md").read_text() == registry.reference_markdown()


@pytest.mark.parametrize("workers", [1.5, "2", True])
def test_tables_workers_not_a_whole_number_is_a_clear_error(tmp_path, workers):
    path = tmp_path / "day.itch"
    write_itch(path, 200, 2, seed=1)
    with pytest.raises(ObookError, match="workers must be an integer"):
        obook.bbo(path, workers=workers)


def test_tables_tickers_option_meaning_says_a_ticker_not_in_the_feed_is_an_error(tmp_path):
    feed = tmp_path / "day.itch"
    write_itch(feed, 2000, 4, seed=3)
    with pytest.raises(ObookError, match="not in the feed: ZZZZ"):
        obook.bbo(feed, tickers=["ZZZZ"]).read_all()
    assert "tickers" in registry.tables()["bbo"].options
    assert "never names: an error" in registry.OPTIONS["tickers"].doc


def test_tables_choice_options_any_case_give_the_rows_of_the_word(days):
    """on_error, prices and format read in any case (their choices are declared in the
    registry), as stp= and an order file's words; '' is no on_error."""
    choosing = [o.name for o in registry.OPTIONS.values() if o.choices]
    assert {"on_error", "prices"} <= set(choosing)
    want = obook.bbo(days["itch"], on_error="skip", prices="decimal", format="itch", workers=1).read_all()
    got = obook.bbo(days["itch"], on_error="Skip", prices="DECIMAL", format="ITCH", workers=1).read_all()
    assert got.equals(want) and got.schema.metadata[b"obook.prices"] == b"decimal"
    with pytest.raises(ObookError, match="on_error must be one of raise, skip, not ''"):
        obook.bbo(days["itch"], on_error="")


def test_tables_bars_doc_volume_and_turnover_in_the_feeds_quantity_unit_not_shares():
    doc = registry.table("bars").doc
    assert "executed shares" not in doc and "quantity unit" in doc and "obook.quantity_scale" in doc


def test_tables_itch_side_table_date_gives_its_timestamp_on_every_front_end_as_convert_does(days, con, tmp_path):
    """convert --date stamped the side tables; obook.symbols(date=) and the others refused date."""
    from typer.testing import CliRunner

    from obook.cli import app
    from obook.to_parquet import convert

    feed = days["itch"]
    want = convert(feed, tmp_path / "out", tables="system_events", date="2019-12-30")
    assert want["rows"]["system_events"] > 0
    converted = pq.read_table(tmp_path / "out" / "system_events.parquet").column("timestamp").to_pylist()
    assert obook.system_events(feed, date="2019-12-30").read_all().column("timestamp").to_pylist() == converted
    assert obook.scan_system_events(feed, date="2019-12-30").collect()["timestamp"].to_list() == converted
    sql = con.execute(f"SELECT timestamp FROM obook_system_events('{feed}', date := '2019-12-30')").fetchall()
    assert [r[0] for r in sql] == converted
    res = CliRunner().invoke(app, ["table", "system_events", str(feed), "--date", "2019-12-30",
                                   "-o", str(tmp_path / "t.parquet")])
    assert res.exit_code == 0, res.output
    assert pq.read_table(tmp_path / "t.parquet").column("timestamp").to_pylist() == converted
    assert "date" not in registry.table("gaps").options      # no feed time to stamp


@pytest.mark.parametrize("module, name, args, says", [
    ("obook", "trades", (2,), "trades() takes 1 positional argument but 2 were given"),
    ("obook", "bbo", (2,), "bbo() takes 1 positional argument but 2 were given"),
    ("obook.polars", "scan_depth", (5, 2), "scan_depth() takes 1 positional argument but 3 were given"),
    ("obook", "bars", ("5 minutes", 2), "bars() takes 2 positional arguments but 3 were given"),
], ids=["trades", "bbo", "scan_depth", "bars"])
def test_front_function_too_many_positional_arguments_says_so_as_python_does(module, name, args, says):
    """An option given by position (``obook.trades(path, 2)``): Python's own words, the count right."""
    import importlib

    front = getattr(importlib.import_module(module), name)
    with pytest.raises(TypeError, match="^" + re.escape(says) + "$"):
        front("day.itch", *args)
