"""The session date and the ``timestamp`` column of every replay table (obook/session.py)."""

import datetime as dt

import pyarrow as pa
import pytest

import obook
from obook.errors import FeedError, ObookError
from obook.gen.csv import write_csv
from obook.gen.itch import write_itch
from obook.session import midnight_ns, session_date

TS = pa.timestamp("ns", tz="UTC")


@pytest.fixture(scope="module")
def nasdaq_day(tmp_path_factory):
    path = tmp_path_factory.mktemp("session") / "12302019.NASDAQ_ITCH50"
    write_itch(path, 3000, 5, seed=2)
    return path


def _ns(table):
    return table["timestamp"].cast(pa.int64()).to_pylist()


def test_session_midnight_ns_new_york_offsets_expected():
    assert midnight_ns(dt.date(2019, 12, 30)) == 1577682000 * 10**9      # EST, UTC-5
    assert midnight_ns(dt.date(2019, 7, 1)) == 1561953600 * 10**9        # EDT, UTC-4


@pytest.mark.parametrize("table", ["bbo", "trades", "orders", "depth"])
def test_session_nasdaq_name_every_table_has_timestamp_after_time(nasdaq_day, table):
    t = getattr(obook, table)(nasdaq_day, workers=1).read_all()
    names = t.schema.names
    assert names[names.index("time") + 1] == "timestamp" and t.schema.field("timestamp").type == TS
    assert t.num_rows > 0
    assert _ns(t) == [midnight_ns(dt.date(2019, 12, 30)) + x for x in t["time"].to_pylist()]


def test_session_date_option_overrides_name_and_workers_agree(nasdaq_day):
    one = obook.bbo(nasdaq_day, workers=1, date="2020-07-01").read_all()
    two = obook.bbo(nasdaq_day, workers=2, date=dt.date(2020, 7, 1)).read_all()
    assert one.equals(two)
    assert _ns(one)[0] == midnight_ns(dt.date(2020, 7, 1)) + one["time"][0].as_py()


def test_session_unknown_date_no_timestamp_column(tmp_path):
    path = tmp_path / "day.itch"
    write_itch(path, 500, 2, seed=1)
    assert session_date(path) is None
    assert "timestamp" not in obook.bbo(path, workers=1).schema.names
    assert obook.bbo(path, workers=1).schema.equals(obook.bbo_schema, check_metadata=False)


@pytest.mark.parametrize("name, want", [("nasdaq_20191230.itch", None),
                                         ("12302019.NASDAQ_ITCH50", dt.date(2019, 12, 30))])
def test_session_date_itch_file_no_format_given_reads_itch_naming_rule(tmp_path, name, want):
    path = tmp_path / name
    write_itch(path, 500, 2, seed=1)
    assert session_date(path) == want
    assert ("timestamp" in obook.bbo(path, workers=1).schema.names) == (want is not None)


def test_session_date_csv_file_no_format_given_reads_iso_date_in_name(tmp_path):
    path = tmp_path / "orders_20210504.csv"
    write_csv(path, 500, 2, seed=1)
    assert session_date(path) == dt.date(2021, 5, 4)


@pytest.mark.parametrize("date", [None, "2024-01-05"])
def test_session_feed_files_of_two_days_error_naming_both(tmp_path, date):
    """The files of one feed (a tuple; several FEEDs on the command line) whose names say two
    days are refused before any row, a given date or not: the second day's records would
    replay as the first's. The pieces of one day replay as the whole day."""
    from obook.gen.sse import write_sse

    first, second = tmp_path / "2024-01-05.log", tmp_path / "2024-01-08.log"
    write_sse(first, 500, 2, seed=1)
    write_sse(second, 500, 2, seed=2)
    want = f"^{second}: session date 2024-01-08, not 2024-01-05 as {first}: the files of one feed are one day's"
    with pytest.raises(ObookError, match=want):
        obook.bbo((first, second), workers=1, date=date).read_all()
    lines = first.read_text().splitlines(keepends=True)
    a, b = tmp_path / "2024-01-05_a.log", tmp_path / "2024-01-05_b.log"
    a.write_text("".join(lines[:300]))
    b.write_text("".join(lines[300:]))
    assert obook.bbo((a, b), workers=1, date=date).read_all().equals(obook.bbo(first, workers=1, date=date).read_all())


def test_session_csv_time_is_milliseconds(tmp_path):
    path = tmp_path / "orders.csv"
    write_csv(path, 1000, 3, seed=1)
    t = obook.trades(path, workers=2, date="2021-05-04").read_all()
    assert _ns(t) == [midnight_ns(dt.date(2021, 5, 4)) + 1_000_000 * x for x in t["time"].to_pylist()]


def test_session_bad_date_raises_obook_error_naming_the_option(nasdaq_day):
    with pytest.raises(obook.ObookError, match=r"^--date / date= '30/12/2019': not a day YYYY-MM-DD$"):
        obook.bbo(nasdaq_day, date="30/12/2019")


def test_session_polars_scan_schema_has_timestamp(nasdaq_day):
    import polars as pl

    lf = obook.scan_depth(nasdaq_day, levels=2, workers=1)
    assert lf.collect_schema()["timestamp"] == pl.Datetime("ns", "UTC")
    df = lf.select("time", "timestamp").collect()
    assert df["timestamp"].dt.epoch("ns").to_list() == [
        midnight_ns(dt.date(2019, 12, 30)) + x for x in df["time"].to_list()]
    first = obook.scan_bbo(nasdaq_day, date="2020-07-01", workers=1).select("time", "timestamp").head(1).collect()
    assert first["timestamp"].dt.epoch("ns")[0] == midnight_ns(dt.date(2020, 7, 1)) + first["time"][0]


def test_session_duckdb_macros_timestamp_from_name_or_date(nasdaq_day, tmp_path):
    con = obook.connect()
    day = str(nasdaq_day)
    got = con.sql(f"SELECT time, epoch_ns(timestamp) FROM obook_bbo('{day}', workers := 1)").fetchall()
    base = midnight_ns(dt.date(2019, 12, 30))
    assert got and all(ns == base + t for t, ns in got)
    n = con.sql(f"SELECT count(*) FROM obook_depth('{day}', levels := 2, date := '2020-07-01') "
                f"WHERE epoch_ns(timestamp) = {midnight_ns(dt.date(2020, 7, 1))} + time").fetchall()[0][0]
    assert n == obook.depth(nasdaq_day, levels=2).read_all().num_rows > 0
    plain = tmp_path / "day.itch"
    write_itch(plain, 300, 2, seed=1)
    assert "timestamp" not in [c[0] for c in con.sql(f"DESCRIBE SELECT * FROM obook_trades('{plain}')").fetchall()]
    with pytest.raises(Exception, match="YYYY-MM-DD"):
        con.sql(f"SELECT * FROM obook_orders('{day}', date := 'tomorrow')").fetchall()


@pytest.fixture(scope="module")
def zoned_days(tmp_path_factory):
    """A generated day of a New York, a Shanghai and a UTC-epoch format, with the date option
    each needs for a timestamp."""
    from obook.gen.databento import mbo_flow, write_dbn
    from obook.gen.sse import write_sse

    root = tmp_path_factory.mktemp("zones")
    write_itch(root / "day.itch", 600, 2, seed=4)
    write_sse(root / "day.log", 600, 2, seed=4)
    write_dbn(root / "day.dbn", mbo_flow(600, 2, seed=4))
    return [(root / "day.itch", "2019-12-30", "America/New_York"), (root / "day.log", "2021-03-04", "Asia/Shanghai"),
            (root / "day.dbn", None, "UTC")]


def test_session_timestamp_is_utc_the_same_instants_in_every_front_end(zoned_days):
    import polars as pl
    from typer.testing import CliRunner

    from obook.cli import app

    con = obook.connect()
    for path, date, zone in zoned_days:
        t = obook.bbo(path, workers=1, date=date).read_all()
        assert t.schema.field("timestamp").type == TS
        assert t.schema.metadata[b"obook.time_zone"] == zone.encode()      # the zone of its midnight
        want = _ns(t)
        if date:
            assert want[0] == midnight_ns(dt.date.fromisoformat(date), zone) + t["time"][0].as_py()
        opt = f", date := '{date}'" if date else ""
        query = f"SELECT epoch_ns(timestamp), CAST(timestamp AS VARCHAR) FROM obook_bbo('{path}', workers := 1{opt})"
        rows = con.sql(query).fetchall()
        assert [r[0] for r in rows] == want
        assert rows[0][1].endswith("+00")                      # shown in UTC
        assert con.sql(f"SELECT typeof(timestamp) FROM obook_bbo('{path}'{opt}) LIMIT 1").fetchall() == [
            ("TIMESTAMPTZ_NS",)]
        cli = CliRunner().invoke(app, ["sql", query, "--format", "csv"])
        assert cli.exit_code == 0, cli.output
        assert [ln.split(",")[1].strip('"') for ln in cli.output.splitlines()[1:]] == [r[1] for r in rows]   # as Python
        lf = obook.scan_bbo(path, workers=1, date=date).select("timestamp")
        assert lf.collect_schema()["timestamp"] == pl.Datetime("ns", "UTC")
        assert lf.collect()["timestamp"].dt.epoch("ns").to_list() == want
    con.close()


@pytest.mark.parametrize("date", ["9999-12-31", "1600-01-01"])
def test_session_date_beyond_ns_timestamps_is_a_clear_error(tmp_path, date):
    path = tmp_path / "day.csv"
    path.write_text("Time,Ticker,Order,T,Shares,Price\n1000,AAA,1,B,100,1000\n")
    with pytest.raises(ObookError, match=f"{date}: {date} is outside the days ns timestamps hold"):
        obook.bbo(path, date=date, workers=1).read_all()
    named = tmp_path / "12319999.NASDAQ_ITCH50"
    named.write_bytes(b"")
    with pytest.raises(ObookError, match="its session date: 9999-12-31 is outside"):
        obook.bbo(named, workers=1)


@pytest.mark.parametrize("workers", [1, 2])
def test_session_time_past_2262_error_names_its_line_after_the_rows_before(tmp_path, workers):
    path = tmp_path / "day.csv"
    path.write_text("Time,Ticker,Order,T,Shares,Price\n1000,AAA,1,B,100,1000\n2000,AAA,2,S,100,1010\n"
                    "9300000000000,AAA,3,B,100,1005\n3000,AAA,4,B,100,1001\n")
    batches = []
    with pytest.raises(FeedError, match="line 4: time 9300000000000 gives an instant beyond 1677-2262"):
        for b in obook.bbo(path, date="2024-01-01", workers=workers):
            batches.append(b)
    assert [r["seq"] for b in batches for r in b.to_pylist()] == [2, 3]


def _said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "obook" and "session date" in r.getMessage()]


def _convert(path, out):
    obook.convert(path, out, workers=1, date="2019-12-31")


def _lobster(path, out):
    from obook.lobster import lobster

    lobster(path, out, ["AAA"], levels=1, workers=1, date="2019-12-31")


def _duckdb(path, out):
    import obook.duckdb

    con = obook.duckdb.connect()
    con.sql(f"SELECT count(*) FROM obook_bbo('{path}', date := '2019-12-31', workers := 1)").fetchall()


def _polars(path, out):
    obook.scan_bbo(path, date="2019-12-31", workers=1).select("timestamp").collect()


def _reader(path, out):
    obook.bbo(path, date="2019-12-31", workers=1).read_all()


@pytest.mark.parametrize("front", [_reader, _polars, _duckdb, _convert, _lobster])
def test_session_date_contradicting_nasdaq_name_warns_once_given_date_used(tmp_path, caplog, front):
    path = tmp_path / "12302019.NASDAQ_ITCH50"
    write_itch(path, 2000, 3, seed=1)
    with caplog.at_level("WARNING", logger="obook"):
        front(path, tmp_path / "out")
    assert _said(caplog) == [f"{path}: --date / date= 2019-12-31 is not the feed's own session date 2019-12-30 "
                             "(from its file name or first records); 2019-12-31 is used"]


@pytest.mark.parametrize("date", ["1677-09-21", "9999-12-31"])
def test_session_date_beyond_ns_timestamps_contradicting_name_error_without_used_warning(tmp_path, caplog, date):
    path = tmp_path / "12302019.NASDAQ_ITCH50"
    write_itch(path, 500, 2, seed=1)
    with caplog.at_level("WARNING", logger="obook"), \
            pytest.raises(ObookError, match=f"--date / date= {date}: {date} is outside the days ns timestamps hold"):
        obook.bbo(path, date=date, workers=1).read_all()
    assert _said(caplog) == []


def test_session_date_agreeing_with_nasdaq_name_no_warning(tmp_path, caplog):
    path = tmp_path / "12302019.NASDAQ_ITCH50"
    write_itch(path, 500, 2, seed=1)
    with caplog.at_level("WARNING", logger="obook"):
        t = obook.bbo(path, date="2019-12-30", workers=1).read_all()
    assert t.num_rows > 0 and _said(caplog) == []


def test_session_date_contradicting_name_cli_prints_warning_line(tmp_path):
    import os
    import subprocess
    import sys

    import pyarrow.parquet as pq

    path = tmp_path / "12302019.NASDAQ_ITCH50"
    write_itch(path, 500, 2, seed=1)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(obook.__file__)))
    done = subprocess.run([sys.executable, "-m", "obook", "bbo", str(path), "--date", "2020-01-02", "-w", "1",
                           "-o", str(tmp_path / "bbo.parquet")], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "session date" in line]
    assert said == [f"obook: {path}: --date / date= 2020-01-02 is not the feed's own session date 2019-12-30 "
                    "(from its file name or first records); 2020-01-02 is used"]
    stamps = pq.read_table(tmp_path / "bbo.parquet", columns=["time", "timestamp"])
    assert _ns(stamps)[0] == midnight_ns(dt.date(2020, 1, 2)) + stamps["time"][0].as_py()


@pytest.mark.parametrize("name, first, second", [
    ("trades_2024-03-01_2024-03-05.csv", "2024-03-01", "2024-03-05"),
    ("20240305-20240301.csv", "2024-03-05", "2024-03-01"),
    ("2024-03-07/../orders_20240301_2024-03-05.csv", "2024-03-01", "2024-03-05")])
def test_session_name_with_two_dates_first_used_with_a_warning_naming_both(name, first, second, caplog):
    from obook.feeds import named_date

    with caplog.at_level("WARNING", logger="obook"):
        assert named_date(name).isoformat() == first
        named_date(name)
    warned = [r.getMessage() for r in caplog.records if "two dates" in r.getMessage()]
    assert warned == [f"{name}: its name carries two dates ({first}, {second}); {first} is used as the session "
                      "date (give --date / date= to choose)"]


@pytest.mark.parametrize("name", ["20240301_2024-03-01.csv", "day_2024-03-01_v20240399.csv"])
def test_session_name_with_one_date_spelled_twice_or_one_valid_is_that_date(name, caplog):
    from obook.feeds import named_date

    with caplog.at_level("WARNING", logger="obook"):
        assert named_date(name) == dt.date(2024, 3, 1)
    assert not caplog.records


def test_session_csv_name_with_two_dates_cli_warns_given_date_uses_it_quietly(tmp_path):
    from hostile_support import obook_cli

    path = tmp_path / "day_2024-03-01_2024-03-05.csv"
    write_csv(path, 200, 3, seed=1)
    out = tmp_path / "bbo.parquet"
    for date in (None, "2024-03-05"):
        res = obook_cli("bbo", str(path), "-o", str(out), *(("--date", date) if date else ()))
        assert res.returncode == 0, res.stderr
        assert (b"carries two dates (2024-03-01, 2024-03-05); 2024-03-01 is used" in res.stderr) == (date is None)
        got = obook.bbo(str(path), date=date).read_all()
        day = dt.date.fromisoformat(date or "2024-03-01")
        assert got["timestamp"][0].value // 86_400_000_000_000 == (day - dt.date(1970, 1, 1)).days
