"""obook.matching.match_reader and the front ends that open a matching table through it
(the DuckDB macros, polars' scan_match): match()'s rows, and a run that stops when the
consumer has the rows it wants."""

from __future__ import annotations

import pyarrow as pa
import pytest

import obook
from obook.matching import books as books_mod
from obook.matching import match_reader
from match_flows import random_flow, to_table, tuples

TABLES = ("fills", "events", "bbo", "depth")
MACROS = {"fills": "obook_match", "events": "obook_match_events", "bbo": "obook_match_bbo",
          "depth": "obook_match_depth"}
OPTIONS = [dict(), dict(date="2024-03-01", levels=3), dict(stp="cancel_incoming", day_end=False),
           dict(instruments=["AAA", "CCC"], tick=2, stp="cancel_resting")]


@pytest.fixture(scope="module")
def orders(tmp_path_factory):
    import pyarrow.csv as pcsv

    p = tmp_path_factory.mktemp("match_reader") / "orders.csv"
    pcsv.write_csv(to_table(random_flow(5, 3000, tick=1)), p)
    return p


@pytest.fixture
def runs(monkeypatch):
    """Small kernel buffers (a run flushes many times) and a count of the flushes and of
    the streamed runs opened and closed."""
    seen = {"flushes": 0, "opened": 0, "closed": 0}
    flush, stream = books_mod.MatchBooks.flush, books_mod.stream_books

    def counted_flush(self):
        seen["flushes"] += 1
        return flush(self)

    def counted_stream(*args, **kwargs):
        seen["opened"] += 1
        try:
            yield from stream(*args, **kwargs)
        finally:
            seen["closed"] += 1

    monkeypatch.setattr(books_mod, "CHUNK", 64)
    monkeypatch.setattr(books_mod.MatchBooks, "flush", counted_flush)
    monkeypatch.setattr(books_mod, "stream_books", counted_stream)
    return seen


def _flushes_of_a_whole_run(orders, table: str, runs: dict) -> int:
    runs["flushes"] = 0
    obook.match(orders, tables=(table,))
    whole, runs["flushes"] = runs["flushes"], 0
    assert whole >= 4, table           # enough flushes to tell a stopped run from a whole one
    return whole


@pytest.mark.parametrize("options", OPTIONS)
def test_match_reader_options_give_match_rows_and_schema(orders, options):
    whole = obook.match(orders, workers=1, **options)
    for t in TABLES:
        got = match_reader(orders, t, **options).read_all()
        assert got.schema.equals(whole.table(t).schema, check_metadata=True), t
        assert got.equals(whole.table(t)), t
    if "date" in options:
        assert whole.fills.schema.names[:3] == ["seq", "time", "timestamp"]


@pytest.mark.parametrize(("options", "says"), [
    (dict(date="2024-13-01"), "not a day YYYY-MM-DD"),
    (dict(levels=0), "levels"),
    (dict(stp="never"), "stp must be one of"),
    (dict(instruments=""), "names no instrument"),
    (dict(day_end="no"), "day_end must be True or False"),
])
def test_match_reader_wrong_option_raises_match_error(orders, tmp_path, options, says):
    for path in (orders, tmp_path / "missing.csv"):     # the option is told before the file
        with pytest.raises(obook.ObookError, match=says) as by_match:
            obook.match(path, **options)
        with pytest.raises(obook.ObookError, match=says) as by_reader:
            match_reader(path, "fills", **options)
        assert str(by_reader.value) == str(by_match.value)


def test_match_reader_table_not_one_name_raises_obook_error(orders):
    with pytest.raises(obook.ObookError, match="table must be the name of one table"):
        match_reader(orders, ("fills", "events"))
    with pytest.raises(obook.ObookError, match="unknown table 'trades'"):
        match_reader(orders, "trades")


def test_match_reader_unread_rest_stops_the_run(orders, runs):
    whole = _flushes_of_a_whole_run(orders, "events", runs)
    reader = match_reader(orders, "events")
    reader.read_next_batch()
    reader.close()
    del reader
    assert runs["flushes"] < whole and runs["opened"] == runs["closed"] == 1


@pytest.mark.parametrize("table", TABLES)
def test_duckdb_match_limit_stops_the_run_early(orders, runs, table):
    whole = _flushes_of_a_whole_run(orders, table, runs)
    con = obook.connect()
    got = con.sql(f"SELECT * FROM {MACROS[table]}('{orders}') LIMIT 5").fetchall()
    assert 0 < runs["flushes"] < whole
    assert runs["opened"] == runs["closed"] == 1         # the pool's stream let go of the run
    assert got == tuples(obook.match(orders).table(table).slice(0, 5))


@pytest.mark.parametrize("options", OPTIONS + [dict(workers=2, date="2024-03-01", levels=3)])
def test_duckdb_match_macros_rows_equal_match_in_order(orders, options):
    con = obook.connect()
    given = ", ".join(f"{k} := {v!r}" for k, v in options.items())
    whole = obook.match(orders, **options)
    for t in TABLES:
        if "levels" in options and t != "depth":
            continue
        got = con.sql(f"SELECT * FROM {MACROS[t]}('{orders}'{', ' if given else ''}{given})").arrow()
        got = got.read_all() if isinstance(got, pa.RecordBatchReader) else got
        assert got.schema.names == whole.table(t).schema.names, t       # DuckDB's are nullable
        assert tuples(got) == tuples(whole.table(t)), t


def test_duckdb_match_limit_then_whole_query_reuses_the_entry(orders, runs):
    con = obook.connect()
    sql = f"SELECT * FROM obook_match_events('{orders}')"
    first = [con.sql(f"{sql} LIMIT 3").fetchall() for _ in range(2)]
    every = con.sql(sql).fetchall()
    assert first[0] == first[1] == every[:3] and len(every) == obook.match(orders).events.num_rows
    assert runs["opened"] == runs["closed"] == 3


@pytest.mark.parametrize("table", TABLES)
def test_polars_scan_match_head_stops_the_run_early(orders, runs, table):
    import polars as pl

    whole = _flushes_of_a_whole_run(orders, table, runs)
    got = obook.scan_match(orders, table=table).head(5).collect()
    assert 0 < runs["flushes"] < whole and runs["opened"] == runs["closed"] == 1
    assert got.equals(pl.from_arrow(obook.match(orders).table(table).slice(0, 5)))


def test_polars_scan_match_workers_two_gives_the_same_rows(orders):
    for t in TABLES:
        one = obook.scan_match(orders, table=t, date="2024-03-01").collect()
        assert one.equals(obook.scan_match(orders, table=t, date="2024-03-01", workers=2).collect()), t


@pytest.fixture(scope="module")
def bad_orders(tmp_path_factory):
    """Orders whose row 2500 cannot be read, and match()'s FeedError (with its partial)."""
    from match_flows import csv_with_bad_row

    p = csv_with_bad_row(tmp_path_factory.mktemp("match_reader_bad") / "orders.csv", 7, 4000, 2500)
    with pytest.raises(obook.FeedError, match="row 2500: price is not an integer") as err:
        obook.match(p, workers=2)
    return p, err.value


@pytest.mark.parametrize("workers", [1, 2])
def test_table_reader_bad_row_yields_the_partial_rows_then_raises(bad_orders, workers):
    from obook.matching import table_reader

    orders, error = bad_orders
    for t in TABLES:
        reader, got = table_reader(orders, t, workers=workers), []
        with pytest.raises(obook.FeedError) as err:
            for batch in reader:
                got.append(batch)
        assert str(err.value) == str(error) and f"{orders}: row 2500:" in str(err.value), t
        assert pa.Table.from_batches(got, reader.schema).equals(error.partial.table(t)), t
    got, reader = [], match_reader(orders, "events", date="2024-03-01")
    with pytest.raises(obook.FeedError, match="row 2500"):
        for batch in reader:
            got.append(batch)
    assert pa.Table.from_batches(got, reader.schema).num_rows == error.partial.events.num_rows > 0


@pytest.mark.parametrize("workers", [1, 2])
def test_duckdb_match_bad_row_limit_gives_the_partial_rows_count_raises(bad_orders, workers, no_leaks):
    import duckdb

    orders, error = bad_orders
    con = obook.connect()
    for t in TABLES:
        sql = f"SELECT * FROM {MACROS[t]}('{orders}', workers := {workers})"
        assert con.sql(f"{sql} LIMIT 10").fetchall() == tuples(error.partial.table(t).slice(0, 10)), t
        with pytest.raises(duckdb.Error) as err:
            con.sql(f"SELECT count(*) FROM ({sql})").fetchall()
        assert f"FeedError: {error}" in str(err.value), t


@pytest.mark.parametrize("workers", [1, 2])
def test_polars_scan_match_bad_row_head_gives_the_partial_rows_collect_raises(bad_orders, workers, no_leaks):
    import polars as pl

    orders, error = bad_orders
    for t in TABLES:
        lf = obook.scan_match(orders, table=t, workers=workers)
        assert lf.head(10).collect().equals(pl.from_arrow(error.partial.table(t).slice(0, 10))), t
        with pytest.raises(obook.FeedError) as err:
            lf.collect()
        assert str(err.value) == str(error), t
    got = []
    with pytest.raises(obook.FeedError, match="row 2500"):
        for frame in obook.scan_match(orders, table="events", workers=workers).collect_batches():
            got.append(frame)
    assert pl.concat(got).equals(pl.from_arrow(error.partial.events))


@pytest.mark.parametrize("workers", [1, 2])
def test_polars_scan_match_bad_row_error_names_the_file_as_given(tmp_path, monkeypatch, workers):
    """The scan reads the file by its absolute path (a later chdir does not move it); its
    error names it as the call gave it, as obook.match's and the SQL macros' do."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.csv").write_text("time,instrument,action,side,price,quantity\n1,X,new,buy,100,10\n"
                                      "2,X,new,sell,100,5\n3,X,new,sell,abc,5\n")
    with pytest.raises(obook.FeedError) as err:
        obook.scan_match("bad.csv", workers=workers).collect()
    assert str(err.value) == ("bad.csv: row 3: price is not an integer: 'abc' (a whole number: no decimal point, "
                              "exponent or thousands separator)")
    assert err.value.path == "bad.csv"
