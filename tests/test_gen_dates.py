"""``--date`` on every generator: the day goes into the data where the format carries a
date, else into the file name the readers take it from; either way the tables get a UTC
``timestamp`` on that day. ``-n`` sizes every generator."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

import obook
from obook.cli import app
from obook.session import midnight_ns

runner = CliRunner()
GENERATORS = ("itch", "csv", "sse", "szse", "szse-csv", "databento", "pitch", "orders")


def _gen(*args):
    r = runner.invoke(app, ["gen", *map(str, args)])
    return r


@pytest.mark.parametrize("name", GENERATORS)
def test_every_generator_takes_date_and_n(name):
    r = runner.invoke(app, ["gen", name, "--help"], terminal_width=200)
    assert r.exit_code == 0 and "--date" in r.output and "-n," in r.output, r.output


def _stamps_on(table, day, tz, unit_ns=1):
    """The timestamps are midnight of ``day`` in ``tz`` plus the feed time, all on ``day``."""
    assert "timestamp" in table.schema.names
    base = midnight_ns(dt.date.fromisoformat(day), tz)
    times = table.column("time").to_pylist()
    stamps = table.column("timestamp").cast("int64").to_pylist()
    assert stamps == [base + t * unit_ns for t in times]
    local = {dt.datetime.fromtimestamp(s // 10**9, ZoneInfo(tz)).date().isoformat() for s in stamps}
    assert local == {day}


def test_gen_csv_date_names_the_file_and_the_reader_takes_it(tmp_path):
    r = _gen("csv", tmp_path / "days", "-n", "3000", "-k", "3", "--date", "2024-03-01")
    assert r.exit_code == 0, r.output
    day = tmp_path / "days" / "2024-03-01.csv"
    t = obook.bbo(day, workers=1).read_all()
    assert t.num_rows > 100
    _stamps_on(t, "2024-03-01", "America/New_York", 1_000_000)
    named = tmp_path / "orders_20240304.csv"
    assert _gen("csv", named, "-n", "500", "--date", "2024-03-04").exit_code == 0
    _stamps_on(obook.trades(named, workers=1).read_all(), "2024-03-04", "America/New_York", 1_000_000)
    assert _gen("csv", tmp_path / "plain.csv", "-n", "500").exit_code == 0
    assert "timestamp" not in obook.bbo(tmp_path / "plain.csv", workers=1).read_all().schema.names


def test_gen_sse_date_names_the_log_and_the_reader_takes_it(tmp_path):
    r = _gen("sse", tmp_path / "sh", "-n", "2000", "--date", "2024-03-01")
    assert r.exit_code == 0, r.output
    t = obook.bbo(tmp_path / "sh" / "2024-03-01.log", workers=1).read_all()
    assert t.num_rows > 50
    _stamps_on(t, "2024-03-01", "Asia/Shanghai")
    assert _gen("sse", tmp_path / "plain.log", "-n", "500").exit_code == 0
    assert "timestamp" not in obook.bbo(tmp_path / "plain.log", workers=1).read_all().schema.names


def test_gen_pitch_date_goes_into_the_time_reference(tmp_path):
    out = tmp_path / "day.pitch"
    r = _gen("pitch", out, "-n", "3000", "-k", "3", "--date", "2024-07-01")
    assert r.exit_code == 0, r.output
    from obook.feeds.pitch import session_date

    assert session_date(out) == dt.date(2024, 7, 1)
    _stamps_on(obook.bbo(out, workers=1).read_all(), "2024-07-01", "America/New_York")
    assert _gen("pitch", tmp_path / "default.pitch", "-n", "500").exit_code == 0
    assert session_date(tmp_path / "default.pitch") == dt.date(2026, 11, 30)


def test_gen_orders_date_gives_the_match_tables_timestamps(tmp_path):
    r = _gen("orders", tmp_path / "entry", "-n", "3000", "-k", "2", "--date", "2024-03-01")
    assert r.exit_code == 0, r.output
    entry = tmp_path / "entry" / "2024-03-01.parquet"
    r = runner.invoke(app, ["match", str(entry), "-o", str(tmp_path / "m")])
    assert r.exit_code == 0, r.output
    import pyarrow.parquet as pq

    for table in ("fills", "events", "bbo"):
        t = pq.read_table(tmp_path / "m" / f"{table}.parquet")
        assert t.num_rows > 0
        _stamps_on(t, "2024-03-01", "America/New_York")
    first = min(pq.read_table(tmp_path / "m" / "events.parquet").column("time").to_pylist())
    assert first >= 9.5 * 3600 * 10**9                              # the session opens at 09:30
    plain = obook.match(entry, workers=1)
    assert "timestamp" not in plain.fills.schema.names               # the Python call: date= only
    assert obook.match(entry, workers=2, date="2024-03-01").fills.equals(pq.read_table(tmp_path / "m" / "fills.parquet"))


@pytest.mark.parametrize("name, suffix", [("csv", ".csv"), ("sse", ".log"), ("orders", ".parquet")])
def test_gen_date_on_a_name_without_it_or_with_another_day_is_an_error(tmp_path, name, suffix):
    r = _gen(name, tmp_path / f"plain{suffix}", "-n", "100", "--date", "2024-03-01")
    assert r.exit_code != 0 and "carries its session date in its name only" in str(r.exception or r.output)
    r = _gen(name, tmp_path / f"day-2024-03-02{suffix}", "-n", "100", "--date", "2024-03-01")
    assert r.exit_code != 0 and "the name says 2024-03-02" in str(r.exception or r.output)
    assert not list(tmp_path.iterdir())
