"""obook_bbo / obook_messages through a real DuckDB connection (obook.duckdb)."""

from __future__ import annotations

import re
import threading

import duckdb
import pyarrow as pa
import pytest

import obook
from obook.duckdb import connect, install
from frontend_feeds import (BBO_COLUMNS, SMALL_BBO, wait_no_workers, write_failing_feed,
                            write_small_feed)


@pytest.fixture()
def con():
    c = connect()
    yield c
    c.close()


def _rows(reader: pa.RecordBatchReader) -> list[tuple]:
    return [tuple(r[c] for c in BBO_COLUMNS) for r in reader.read_all().to_pylist()]


def test_obook_bbo_exact_select_star_query_returns_every_row(con, tmp_path, monkeypatch):
    write_small_feed(tmp_path / "day.itch")
    monkeypatch.chdir(tmp_path)
    got = con.execute("SELECT * FROM obook_bbo('day.itch')").fetchall()
    assert got == SMALL_BBO
    assert [d[0] for d in con.description] == BBO_COLUMNS


def test_obook_bbo_exact_group_by_query_counts_rows_per_ticker(con, day, monkeypatch):
    monkeypatch.chdir(day.parent)
    got = dict(con.execute(
        "SELECT ticker, count(*) FROM obook_bbo('day.itch', workers := 2) GROUP BY ALL").fetchall())
    expected: dict[str, int] = {}
    for t in obook.bbo(str(day), workers=1).read_all().column("ticker").to_pylist():
        expected[t] = expected.get(t, 0) + 1
    assert got == expected


def test_obook_bbo_column_types_follow_arrow_schema(con, small):
    types = {r[0]: r[1] for r in con.execute(f"DESCRIBE SELECT * FROM obook_bbo('{small}')").fetchall()}
    assert types == {"seq": "BIGINT", "time": "UBIGINT", "ticker": "VARCHAR", "locate": "USMALLINT",
                     "bid_px": "BIGINT", "bid_qty": "BIGINT", "bid_orders": "INTEGER",
                     "ask_px": "BIGINT", "ask_qty": "BIGINT", "ask_orders": "INTEGER"}


def test_obook_bbo_filter_and_projection_match_engine_rows(con, small):
    got = con.execute(f"SELECT seq, ask_px - bid_px FROM obook_bbo('{small}') "
                      "WHERE ticker = 'AAA' AND bid_px IS NOT NULL AND ask_px IS NOT NULL ORDER BY seq").fetchall()
    assert got == [(r[0], r[7] - r[4]) for r in SMALL_BBO
                   if r[2] == "AAA" and r[4] is not None and r[7] is not None]


def test_obook_bbo_workers_give_identical_rows(con, day):
    one = con.execute(f"SELECT * FROM obook_bbo('{day}', workers := 1) ORDER BY seq").fetchall()
    three = con.execute(f"SELECT * FROM obook_bbo('{day}', workers := 3) ORDER BY seq").fetchall()
    assert one == three
    assert one == _rows(obook.bbo(str(day), workers=2))


def test_obook_bbo_limit_returns_early_and_stops_workers(con, big, tmp_path):
    # the day's last record is cut short: a replay that reached it would raise, so a LIMIT
    # that returns its rows stopped the replay long before the end
    cut = tmp_path / "cut_at_end.itch"
    cut.write_bytes(big.read_bytes() + b"\x00\x24A\x00\x01")
    with pytest.raises(duckdb.Error, match="cut_at_end.itch"):
        con.execute(f"SELECT count(*) FROM obook_bbo('{cut}', workers := 2)").fetchall()
    assert wait_no_workers() == []
    got = con.execute(f"SELECT * FROM obook_bbo('{cut}', workers := 2) LIMIT 10").fetchall()
    assert len(got) == 10
    assert wait_no_workers() == []


def test_obook_bbo_self_join_runs_two_replays(con, small):
    got = con.execute(f"""
        SELECT count(*), sum(CASE WHEN a.bid_px IS NOT DISTINCT FROM b.bid_px THEN 1 ELSE 0 END)
        FROM obook_bbo('{small}') a JOIN obook_bbo('{small}') b USING (seq)""").fetchall()
    assert got == [(len(SMALL_BBO), len(SMALL_BBO))]


def test_obook_bbo_union_all_of_two_feeds_keeps_both(con, small, day):
    got = con.execute(f"""
        SELECT src, count(*) FROM (
            SELECT 'small' AS src, * FROM obook_bbo('{small}')
            UNION ALL SELECT 'day' AS src, * FROM obook_bbo('{day}', workers := 2)
            UNION ALL SELECT 'small2' AS src, * FROM obook_bbo('{small}', workers := 1)
        ) GROUP BY src ORDER BY src""").fetchall()
    n_day = obook.bbo(str(day), workers=1).read_all().num_rows
    assert got == [("day", n_day), ("small", len(SMALL_BBO)), ("small2", len(SMALL_BBO))]


def test_obook_bbo_prepared_parameters_bind_path_and_workers(con, small):
    sql = "SELECT count(*) FROM obook_bbo(?, workers := ?) WHERE ticker = ?"
    assert con.execute(sql, [str(small), 1, "AAA"]).fetchall() == [(7,)]
    assert con.execute(sql, [str(small), 2, "BBB"]).fetchall() == [(3,)]


def test_obook_bbo_missing_path_raises_duckdb_error_with_obook_text(con, tmp_path):
    missing = tmp_path / "nope.itch"
    with pytest.raises(duckdb.Error, match="no such feed file"):
        con.execute(f"SELECT * FROM obook_bbo('{missing}')").fetchall()
    assert wait_no_workers() == []


def test_obook_bbo_failing_record_raises_duckdb_error_with_feed_error_text(con, tmp_path):
    bad = write_failing_feed(tmp_path / "bad.itch")
    with pytest.raises(obook.FeedError) as engine_error:
        obook.bbo(str(bad), workers=1).read_all()
    text = str(engine_error.value)
    assert "message 7" in text
    for workers in (1, 2):
        with pytest.raises(duckdb.Error) as err:
            con.execute(f"SELECT * FROM obook_bbo('{bad}', workers := {workers})").fetchall()
        assert text in str(err.value)
    assert wait_no_workers() == []



@pytest.mark.parametrize("given", ["bad.itch", "./bad.itch", "['bad.itch']", "'b*.itch'"])
def test_obook_bbo_failing_record_error_names_the_file_as_the_query_gave_it(tmp_path, monkeypatch, given):
    write_failing_feed(tmp_path / "bad.itch")
    monkeypatch.chdir(tmp_path)
    path = given if given.startswith(("[", "'")) else f"'{given}'"
    text = _query_error(f"select * from obook_bbo({path}, workers := 1)")
    named = given if not given.startswith(("[", "'")) else "bad.itch"
    assert f"FeedError: {named}: message 7: " in text and str(tmp_path) not in text, text


@pytest.mark.parametrize("path, says", [("('a.itch', 'b.csv')", "b.csv: format csv, but a.itch is format itch"),
                                        ("['a.itch', 'b.csv']", "b.csv: a csv feed, whose units")])
def test_obook_bbo_files_refused_together_error_names_them_as_the_query_gave_them(tmp_path, monkeypatch, path, says):
    write_small_feed(tmp_path / "a.itch")
    (tmp_path / "b.csv").write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,1,B,100,1000\n")
    monkeypatch.chdir(tmp_path)
    text = _query_error(f"select * from obook_bbo({path})")
    assert says in text and str(tmp_path) not in text, text


def _query_error(sql: str) -> str:
    """The text of the DuckDB error that running ``sql`` on a new connection ends in."""
    c = obook.connect()
    try:
        with pytest.raises(duckdb.Error) as err:
            c.sql(sql).fetchall()
    finally:
        c.close()
    return str(err.value)


@pytest.mark.parametrize("workers", [1, 2])
def test_obook_bbo_failing_record_error_text_is_the_feed_error_without_traceback(tmp_path, workers):
    bad = write_failing_feed(tmp_path / "bad.itch")
    with pytest.raises(obook.FeedError) as engine_error:
        obook.bbo(str(bad), workers=1).read_all()
    text = _query_error(f"select * from obook_bbo('{bad}', workers := {workers})")
    assert f"FeedError: {bad}: message 7: {engine_error.value.reason}" in text
    assert "Traceback" not in text and "Detail" not in text and "\n" not in text, text
    assert wait_no_workers() == []


def test_obook_match_events_unreadable_row_error_text_without_traceback(con, tmp_path):
    orders = tmp_path / "orders.csv"
    orders.write_text("time,instrument,order_id,action,side,price,quantity\n1,AAA,1,new,buy,100,5\n"
                      "2,AAA,2,new,buy,abc,5\n")
    with pytest.raises(duckdb.Error) as err:
        con.sql(f"select * from obook_match_events('{orders}')").fetchall()
    text = str(err.value)
    assert f"FeedError: {orders}: row 2: " in text and "price is not an integer" in text, text
    assert "Traceback" not in text and "\n" not in text, text


_RUNS = {
    "obook_match_events('orders.csv')": "FeedError: orders.csv: row 2: ",
    "obook_simulate('./bad.itch', 'good.csv')": "FeedError: ./bad.itch: message 7: ",
    "obook_simulate('good.itch', 'orders.csv')": "FeedError: orders.csv: row 2: ",
    "obook_backtest('./bad.itch', 'none.py:none')": "FeedError: ./bad.itch: message 7: ",
}


@pytest.mark.parametrize("call", sorted(_RUNS))
def test_obook_run_macro_error_names_the_file_as_the_query_gave_it(tmp_path, monkeypatch, call):
    write_failing_feed(tmp_path / "bad.itch")
    write_small_feed(tmp_path / "good.itch")
    (tmp_path / "orders.csv").write_text("time,instrument,order_id,action,side,price,quantity\n"
                                         "1,AAA,1,new,buy,100,5\n2,AAA,2,new,buy,abc,5\n")
    (tmp_path / "good.csv").write_text("time,instrument,order_id,action,side,price,quantity\n1,AAA,1,new,buy,100,5\n")
    (tmp_path / "none.py").write_text("def none(top):\n    return None\n")
    monkeypatch.chdir(tmp_path)
    text = _query_error(f"select * from {call}")
    assert _RUNS[call] in text and str(tmp_path) not in text, text


@pytest.mark.parametrize("where", ["table_reader", "books.stream_books"])
def test_obook_match_error_not_obook_keeps_python_traceback(con, tmp_path, monkeypatch, where):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug, not the input")

    monkeypatch.setattr(f"obook.matching.{where}", broken)     # opening the run, or while it runs
    orders = tmp_path / "orders.csv"
    orders.write_text("time,instrument,order_id,action,side,price,quantity\n1,AAA,1,new,buy,100,5\n")
    with pytest.raises(duckdb.Error) as err:
        con.sql(f"select * from obook_match('{orders}')").fetchall()
    assert "Traceback" in str(err.value) and "RuntimeError: a bug, not the input" in str(err.value)

def test_obook_bbo_bad_arguments_fail_at_bind(con, small):
    with pytest.raises(duckdb.Error, match="workers must be at least 1"):
        con.execute(f"SELECT * FROM obook_bbo('{small}', workers := 0)").fetchall()
    with pytest.raises(duckdb.Error, match="unknown feed format"):
        con.execute(f"SELECT * FROM obook_bbo('{small}', format := 'fix')").fetchall()


def test_obook_bbo_explicit_format_and_on_error_are_passed(con, tmp_path):
    bad = write_failing_feed(tmp_path / "bad.feed")
    got = con.execute(f"SELECT count(*) FROM obook_bbo('{bad}', format := 'itch', "
                      "on_error := 'skip')").fetchall()
    assert got == [(obook.bbo(str(bad), format="itch", on_error="skip").read_all().num_rows,)]


def test_connect_two_connections_query_concurrently(small, day):
    cons = [connect(), connect()]
    results: dict[int, object] = {}

    def run(i: int) -> None:
        try:
            results[i] = cons[i].execute(
                f"SELECT count(*) FROM obook_bbo('{day}', workers := 2)").fetchall()
        except Exception as e:  # reported below
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    n = obook.bbo(str(day), workers=1).read_all().num_rows
    assert results == {0: [(n,)], 1: [(n,)]}
    assert cons[1].execute(f"SELECT count(*) FROM obook_bbo('{small}')").fetchall() == [(len(SMALL_BBO),)]
    for c in cons:
        c.close()


def test_install_on_cursor_of_installed_connection_works(con, small):
    cur = con.cursor()
    install(cur)
    assert cur.execute(f"SELECT count(*) FROM obook_bbo('{small}')").fetchall() == [(len(SMALL_BBO),)]
    assert con.execute(f"SELECT count(*) FROM obook_bbo('{small}')").fetchall() == [(len(SMALL_BBO),)]
    cur.close()


def test_install_on_shared_file_database_works_for_two_connections(tmp_path, small):
    db = str(tmp_path / "x.duckdb")
    a = connect(db)
    a.execute(f"CREATE TABLE bbo AS SELECT * FROM obook_bbo('{small}')")
    a.close()
    b = connect(db)
    assert b.execute("SELECT count(*) FROM bbo").fetchall() == [(len(SMALL_BBO),)]
    assert b.execute(f"SELECT count(*) FROM obook_spread('{small}')").fetchall() == [(len(SMALL_BBO),)]
    b.close()


def test_obook_bbo_many_distinct_calls_in_one_query_get_distinct_sources(con, tmp_path):
    paths = [write_small_feed(tmp_path / f"f{i}.itch") for i in range(5)]
    union = " UNION ALL ".join(f"SELECT {i} AS k, count(*) AS n FROM obook_bbo('{p}', workers := 1)"
                               for i, p in enumerate(paths))
    got = con.execute(f"SELECT * FROM ({union}) ORDER BY k").fetchall()
    assert got == [(i, len(SMALL_BBO)) for i in range(5)]


def test_obook_bbo_relation_reexecutes_fresh_replay(con, small):
    rel = con.sql(f"SELECT count(*) FROM obook_bbo('{small}')")
    assert rel.fetchall() == [(len(SMALL_BBO),)]
    assert rel.fetchall() == [(len(SMALL_BBO),)]


def test_obook_bbo_arrow_and_polars_results_match_rows(con, small):
    table = con.sql(f"SELECT * FROM obook_bbo('{small}')").arrow()
    if isinstance(table, pa.RecordBatchReader):
        table = table.read_all()
    assert [tuple(r[c] for c in BBO_COLUMNS) for r in table.to_pylist()] == SMALL_BBO
    df = con.sql(f"SELECT * FROM obook_bbo('{small}')").pl()
    assert df.rows() == SMALL_BBO


def test_obook_messages_decodes_every_message(con, small):
    got = con.execute(f"SELECT seq, type, locate, time FROM obook_messages('{small}') ORDER BY seq").fetchall()
    assert [g[0] for g in got] == list(range(1, 16))
    assert "".join(g[1] for g in got) == "SRRAAAAAAEDXAUS"
    assert got[3] == (4, "A", 1, 10_000)


def test_obook_messages_missing_path_raises_at_bind(con, tmp_path):
    with pytest.raises(duckdb.Error, match="no such feed file"):
        con.execute(f"SELECT * FROM obook_messages('{tmp_path / 'nope.itch'}')").fetchall()


def test_obook_bbo_streamed_reader_dropped_early_stops_workers(con, big):
    reader = con.sql(f"SELECT * FROM obook_bbo('{big}', workers := 2)").to_arrow_reader()
    assert reader.read_next_batch().num_rows > 0
    del reader
    assert wait_no_workers() == []
    assert con.execute("SELECT 42").fetchall() == [(42,)]


def test_obook_bbo_csv_feed_matches_engine_rows(con, tmp_path):
    feed = tmp_path / "orders.csv"
    feed.write_text("Time,Ticker,Order,T,Shares,Price\n"
                    "34200001,AAA,1,B,100,1172400\n"
                    "34200002,AAA,2,S,50,1172600\n"
                    "34200003,BBB,1,S,10,500000\n"
                    "34200004,AAA,1,E,40,0\n")
    got = con.execute(f"SELECT * FROM obook_bbo('{feed}', format := 'csv')").fetchall()
    assert got == _rows(obook.bbo(str(feed), format="csv", workers=1))
    assert [(r[0], r[3], r[5]) for r in got] == [(2, None, 100), (3, None, 100), (4, None, None), (5, None, 60)]


# obook_depth(path, ..., levels := N): the columns of depth_schema(N), the rows of obook.depth


def _depth_rows(path, levels: int) -> list[tuple]:
    return [tuple(r.values()) for r in obook.depth(str(path), workers=1, levels=levels).read_all().to_pylist()]


def test_obook_depth_levels_3_matches_engine_rows_and_columns(con, day):
    got = con.execute(f"SELECT * FROM obook_depth('{day}', workers := 2, levels := 3) ORDER BY seq").fetchall()
    assert [d[0] for d in con.description] == obook.depth_schema(3).names
    assert len(con.description) == 4 + 2 * 3 * 3
    assert got == _depth_rows(day, 3)
    assert got != _depth_rows(day, 10)[:len(got)]     # a change below level 3 makes no row


def test_obook_depth_without_levels_has_ten_levels(con, small):
    got = con.execute(f"SELECT * FROM obook_depth('{small}') ORDER BY seq").fetchall()
    assert [d[0] for d in con.description] == obook.depth_schema(10).names
    assert got == _depth_rows(small, 10)
    assert len(got) > 0


@pytest.mark.parametrize("levels", [0, 51, -1])
def test_obook_depth_levels_out_of_range_raises_error_naming_range(con, small, levels):
    with pytest.raises(duckdb.Error, match=f"levels must be between 1 and 50, not {levels}"):
        con.execute(f"SELECT * FROM obook_depth('{small}', levels := {levels})").fetchall()
    assert wait_no_workers() == []


@pytest.mark.parametrize(("call", "says"), [
    ("obook_depth('{f}', levels := 5.5)", "levels must be an integer, not 5.5"),
    ("obook_depth('{f}', levels := 'x')", "levels must be an integer, not 'x'"),
    ("obook_bbo('{f}', workers := 2.5)", "workers must be an integer, not 2.5"),
    ("obook_bbo_grid('{f}', every := 1.5)", "every must be a positive integer up to 2\\^63 - 1, not 1.5"),
    ("obook_bbo_grid('{f}', every := 9223372036854775808)",
     "every must be a positive integer up to 2\\^63 - 1, not 9223372036854775808"),
    ("obook_bbo_grid('{f}', every := 10, start_time := 2.5)", "start_time must be an integer from 0 to 2\\^63 - 1, not 2.5"),
    ("obook_bbo_grid('{f}', every := 10, end_time := -1)", "end_time must be an integer from 0 to 2\\^63 - 1, not -1"),
    ("obook_bbo_grid('{f}', every := 10, start_time := 18446744073709551615)",
     "start_time must be an integer from 0 to 2\\^63 - 1, not 18446744073709551615"),
    ("obook_match('{f}', tick := 0.5)", "tick must be an integer, not 0.5"),
    ("obook_simulate_depth('{f}', 'own.csv', levels := 1.5)", "levels must be an integer, not 1.5"),
    ("obook_backtest('{f}', 'x.py:S', seed := 0.5)", "seed must be an integer, not 0.5"),
    # as in Python (levels=True is an error): a BOOLEAN is never read as 1 or 0
    ("obook_depth('{f}', levels := true)", "levels must be an integer, not true"),
    ("obook_bbo('{f}', workers := true)", "workers must be an integer, not true"),
    ("obook_bbo_grid('{f}', every := true)", "every must be a positive integer up to 2\\^63 - 1, not true"),
    ("obook_bbo_grid('{f}', every := 10, start_time := true)", "start_time must be an integer from 0 to 2\\^63 - 1, not true"),
    ("obook_twas('{f}', end_time := false)", "end_time must be an integer from 0 to 2\\^63 - 1, not false"),
    ("obook_match('{f}', tick := true)", "tick must be an integer, not true"),
    ("obook_match_depth('{f}', levels := true)", "levels must be an integer, not true"),
    ("obook_simulate_depth('{f}', 'own.csv', levels := true)", "levels must be an integer, not true"),
    ("obook_simulate('{f}', 'own.csv', horizon := true)", "horizon must be a number, not true"),
    # as in Python (workers=2.0 and levels='5' are errors): a float or a text is never cast to a count
    ("obook_bbo('{f}', workers := 2.0)", "workers must be an integer, not 2.0 \\(a DECIMAL\\(2,1\\)\\)"),
    ("obook_bbo('{f}', workers := 2::DOUBLE)", "workers must be an integer, not 2.0 \\(a DOUBLE\\)"),
    ("obook_depth('{f}', levels := '5')", "levels must be an integer, not '5'"),
    ("obook_bars('{f}', workers := '1')", "workers must be an integer, not '1'"),
    ("obook_bbo_grid('{f}', every := 1e9)", "every must be a positive integer up to 2\\^63 - 1, not 1000000000.0 \\(a DOUBLE\\)$"),
    ("obook_bbo_grid('{f}', every := '10')", "every must be a positive integer up to 2\\^63 - 1, not '10'"),
    ("obook_bbo_grid('{f}', every := 10, start_time := 0.0)", "start_time must be an integer from 0 to 2\\^63 - 1, not 0.0 \\(a DECIMAL\\(2,1\\)\\)$"),
    ("obook_twas('{f}', end_time := '99')", "end_time must be an integer from 0 to 2\\^63 - 1, not '99'"),
    ("obook_match('{f}', tick := '5')", "tick must be an integer, not '5'"),
    ("obook_simulate_depth('{f}', 'own.csv', levels := 5.0)", "levels must be an integer, not 5.0"),
    ("obook_simulate('{f}', 'own.csv', horizon := '2')", "horizon must be a number, not '2'"),
    ("obook_backtest('{f}', 'x.py:S', seed := '1')", "seed must be an integer, not '1'"),
])
def test_obook_macro_number_option_given_fraction_text_or_boolean_names_the_option(con, small, call, says):
    with pytest.raises(duckdb.Error, match=says):
        con.execute(f"SELECT * FROM {call.format(f=small)}").fetchall()


@pytest.mark.parametrize(("call", "says"), [
    ("obook_bbo('{f}', filename := 5)", "filename must be true or false, not 5"),
    ("obook_bbo('{f}', filename := 'x')", "filename must be true or false, not x"),
    ("obook_orders('{f}', queue_positions := 2)", "queue_positions must be true or false, not 2"),
    ("obook_spread('{f}', filename := 'x')", "filename must be true or false, not x"),
    ("obook_twas('{f}', filename := 5)", "obook_twas: filename must be true or false, not 5"),
    ("obook_twas('{f}', filename := 'x')", "obook_twas: filename must be true or false, not x"),
    ("obook_bbo_grid('{f}', 10, filename := 'x')", "obook_bbo_grid: filename must be true or false, not x"),
    ("obook_match('{f}', day_end := 5)", "day_end must be true or false, not 5"),
])
def test_obook_macro_true_false_option_given_a_number_or_other_text_names_the_option(con, small, call, says):
    with pytest.raises(duckdb.Error, match=says):
        con.execute(f"SELECT * FROM {call.format(f=small)}").fetchall()


@pytest.mark.parametrize(("call", "says"), [
    ("obook_simulate('{f}', 5)", "the order path must be text (one file), not 5"),
    ("obook_simulate('{f}', '')", "obook_simulate: orders is empty"),
    ("obook_simulate('{f}', 'own.csv', horizon := 'x')", "horizon must be a number, not 'x'"),
    ("obook_backtest('{f}', 5)", "give FILE.py:NAME or module:NAME"),
    ("obook_backtest(['{f}'], 'x.py:S')", "obook_backtest: strategy: no such file x.py"),
    ("obook_backtest(5, 'x.py:S')", "the feed path must be text (a file, a glob pattern) or a list of them, not 5"),
])
def test_obook_run_macro_argument_of_the_wrong_type_names_it_not_the_slot_function(con, small, call, says):
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"SELECT * FROM {call.format(f=small)}").fetchall()
    assert says in str(e.value) and "__obook" not in str(e.value)


@pytest.mark.parametrize(("value", "named"), [("true", True), ("'true'", True), ("false", False), ("NULL", False)])
def test_obook_macro_true_false_option_given_a_boolean_its_text_or_null_reads(con, small, value, named):
    for table in (f"obook_bbo('{small}', filename := {value})", f"obook_twas('{small}', filename := {value})"):
        columns = [d[0] for d in con.execute(f"SELECT * FROM {table} LIMIT 1").description]
        assert ("filename" in columns) == named


def test_obook_macro_filename_is_the_path_as_given_as_python_and_polars_give_it(con, tmp_path, monkeypatch):
    import obook.polars as opl
    from obook.gen.pitch import write_pitch

    (tmp_path / "days").mkdir()
    for i in (1, 2):
        write_pitch(tmp_path / "days" / f"d{i}.pitch", 300, 3, seed=i)
    monkeypatch.chdir(tmp_path)
    for path in ("days/d1.pitch", "./days/d1.pitch", "days/*.pitch", ["days/d2.pitch", "days/d1.pitch"]):
        sql = con.execute(f"SELECT DISTINCT filename FROM obook_bbo({path!r}, workers := 1, filename := true) "
                          "ORDER BY ALL").fetchall()
        python = obook.bbo(path, workers=1, filename=True).read_all().column("filename").unique().to_pylist()
        polars = opl.scan_bbo(path, workers=1, filename=True).collect()["filename"].unique().to_list()
        assert [r[0] for r in sql] == sorted(python) == sorted(polars), path

@pytest.mark.parametrize(("call", "first"), [
    ("obook_bbo('{f}', on_error = 'skip')", "given by position after path"),
    ("obook_symbols('{f}', prices = 'decimal')", "given by position after path"),
    ("obook_cross_trades('{f}', format = 'itch')", "given by position after path"),
    ("obook_bars('{f}', interval = '5 minutes')", "taken for interval"),
])
def test_obook_macro_option_given_with_equals_error_says_name_colon_equals(con, small, call, first):
    with pytest.raises(duckdb.Error, match=f"given as name := value: name = value is a comparison, whose true or "
                                          f"false was {first}"):
        con.execute(f"SELECT * FROM {call.format(f=small)}").fetchall()


@pytest.mark.parametrize("workers", [0, 1])
def test_obook_macro_first_option_given_right_error_about_another_has_no_equals_hint(con, tmp_path, workers):
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"SELECT * FROM obook_bbo('{tmp_path / 'none.itch'}', workers := {workers})").fetchall()
    assert "no such feed file" in str(e.value) and "name := value" not in str(e.value)


@pytest.mark.parametrize("call", ["obook_bbo('{f}', workers := true)", "obook_spread('{f}', workers := false)",
                                  "obook_depth('{f}', workers := true)"])
def test_obook_macro_first_option_given_true_by_name_error_has_no_comparison_hint(con, small, call):
    """workers := true was typed by name: no comparison was passed by position (an argument by
    position after path is refused on its own), so the error names the value alone."""
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"SELECT * FROM {call.format(f=small)}").fetchall()
    assert "workers must be an integer, not " in str(e.value) and "comparison" not in str(e.value), str(e.value)


@pytest.mark.parametrize("call", ["obook_bbo('{f}', workers := 0)", "obook_spread('{f}', workers := 0)"])
def test_obook_macro_first_option_given_zero_with_colon_equals_has_no_equals_hint(con, small, call):
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"SELECT * FROM {call.format(f=small)}").fetchall()
    assert "workers must be at least 1, got 0" in str(e.value) and "name := value" not in str(e.value)


@pytest.mark.parametrize("levels", ["3::TINYINT", "3::UBIGINT", "3::HUGEINT"])
def test_obook_depth_levels_given_as_any_integer_type_reads_that_many_levels(con, small, levels):
    got = con.execute(f"SELECT * FROM obook_depth('{small}', levels := {levels}) ORDER BY seq").fetchall()
    assert [d[0] for d in con.description] == obook.depth_schema(3).names
    assert got == _depth_rows(small, 3)


def test_obook_depth_two_levels_in_one_query_keep_their_own_rows(con, day):
    got = con.execute(f"""
        SELECT lv, count(*) FROM (
            SELECT 2 AS lv, seq FROM obook_depth('{day}', levels := 2)
            UNION ALL SELECT 4 AS lv, seq FROM obook_depth('{day}', levels := 4)
        ) GROUP BY lv ORDER BY lv""").fetchall()
    two, four = _depth_rows(day, 2), _depth_rows(day, 4)
    assert got == [(2, len(two)), (4, len(four))]
    assert len(two) < len(four)
    # every change of the top 2 levels is a change of the top 4, with the same top 2
    joined = con.execute(f"""
        SELECT count(*), count(b.ask_orders_4),
               sum(CASE WHEN (a.bid_px_2, a.ask_qty_2) IS NOT DISTINCT FROM (b.bid_px_2, b.ask_qty_2)
                   THEN 1 ELSE 0 END)
        FROM obook_depth('{day}', levels := 2) a JOIN obook_depth('{day}', levels := 4) b USING (seq)
        """).fetchall()
    seqs_two = {r[0] for r in two}
    assert joined == [(len(two), sum(r[-1] is not None for r in four if r[0] in seqs_two), len(two))]


def test_obook_depth_pool_entry_reused_for_other_levels_takes_their_columns(small):
    con = install(duckdb.connect(), pool_size=1)
    try:
        for levels in (2, 5, 2):
            got = con.execute(f"SELECT * FROM obook_depth('{small}', levels := {levels}) ORDER BY seq").fetchall()
            assert [d[0] for d in con.description] == obook.depth_schema(levels).names
            assert got == _depth_rows(small, levels)
    finally:
        con.close()


def test_obook_depth_prepared_levels_parameter_binds_its_columns(con, small):
    sql = "SELECT * FROM obook_depth(?, levels := ?) ORDER BY seq"
    for levels in (1, 3):
        got = con.execute(sql, [str(small), levels]).fetchall()
        assert [d[0] for d in con.description] == obook.depth_schema(levels).names
        assert got == _depth_rows(small, levels)


def test_obook_depth_levels_limit_returns_early_and_stops_workers(con, big):
    got = con.execute(f"SELECT * FROM obook_depth('{big}', workers := 2, levels := 3) LIMIT 10").fetchall()
    assert len(got) == 10 and len(got[0]) == 4 + 2 * 3 * 3
    assert wait_no_workers() == []


# ---------------------------------------------------------------- many feeds in one query

def test_obook_bbo_union_of_40_feeds_each_branch_its_own_rows_or_clear_error(con, tmp_path):
    """More distinct argument sets in one query than the pool has entries: each branch must
    get its own file's rows (branch f0 used to get f32's), or the query fails clearly."""
    from obook.gen.itch import write_itch

    paths = []
    for i in range(40):
        paths.append(tmp_path / f"f{i}.itch")
        write_itch(paths[-1], 60 + 5 * i, 3, seed=i)
    expected = [(i, obook.bbo(str(p), workers=1).read_all().num_rows) for i, p in enumerate(paths)]
    union = " UNION ALL ".join(f"SELECT {i} AS f, count(*) AS n FROM obook_bbo('{p}', workers := 1)"
                               for i, p in enumerate(paths))
    # the table macros share 2 * pool_size entries: 40 in one query fit the default
    assert sorted(con.execute(union).fetchall()) == expected
    assert sorted(con.execute(union).fetchall()) == expected     # later queries reuse the entries
    small = install(duckdb.connect(), pool_size=16)
    try:
        with pytest.raises(duckdb.Error, match="at most 32 different argument sets"):
            small.execute(union).fetchall()
        got = sorted(small.execute(" UNION ALL ".join(
            f"SELECT {i} AS f, count(*) AS n FROM obook_bbo('{p}', workers := 1)"
            for i, p in enumerate(paths[:32]))).fetchall())
        assert got == expected[:32]
    finally:
        small.close()


def test_obook_bbo_stale_bound_entries_do_not_block_later_queries(con, tmp_path):
    """Queries that bound a feed but never scanned it (a failing bind) leave entries waiting;
    they belong to finished queries and must be reused, not count against the limit."""
    from obook.gen.itch import write_itch

    paths = []
    for i in range(34):
        paths.append(tmp_path / f"g{i}.itch")
        write_itch(paths[-1], 60 + 5 * i, 3, seed=i)
    for p in paths:   # binds the feed, then fails on the missing column: never scanned
        with pytest.raises(duckdb.Error):
            con.execute(f"SELECT no_such_column FROM obook_bbo('{p}', workers := 1)")
    got = con.execute(f"SELECT count(*) FROM obook_bbo('{paths[-1]}', workers := 1)").fetchone()[0]
    assert got == obook.bbo(str(paths[-1]), workers=1).read_all().num_rows


@pytest.mark.parametrize("path, says", [("42", "must be text"), ("[42]", "must be text"),
                                        ("NULL", "the feed path is NULL"), ("''", "the feed path is empty"),
                                        ("['']", "the feed path is empty"),
                                        ("['day.itch', NULL]", r"the feed path list has a NULL \(item 2 of 2\)")])
def test_obook_bbo_path_that_is_no_text_is_a_clear_error(con, path, says):
    with pytest.raises(Exception, match=says):
        con.sql(f"SELECT * FROM obook_bbo({path})").fetchall()


def test_obook_bars_interval_given_as_a_duckdb_interval_equals_its_text(con, small):
    want = con.execute(f"SELECT * FROM obook_bars('{small}', interval := '20 us') ORDER BY ALL").fetchall()
    got = con.execute(f"SELECT * FROM obook_bars('{small}', interval := INTERVAL 20 MICROSECOND) ORDER BY ALL").fetchall()
    assert got == want and want[0][1] == 40_000      # the bar [40 us, 60 us)


@pytest.mark.parametrize("value", ["5", "5.5", "true"])
def test_obook_bars_interval_of_another_type_is_an_error_naming_it_not_the_udf(con, small, value):
    with pytest.raises(duckdb.Error) as err:
        con.execute(f"SELECT * FROM obook_bars('{small}', interval := {value})").fetchall()
    assert "interval must be like '1 minute'" in str(err.value)
    assert "__obook" not in str(err.value)


def test_obook_bbo_tickers_as_text_replays_those_tickers(con, small):
    want = con.execute(f"SELECT * FROM obook_bbo('{small}', tickers := ['AAA'])").fetchall()
    assert want == [r for r in SMALL_BBO if r[2] == "AAA"]
    assert con.execute(f"SELECT * FROM obook_bbo('{small}', tickers := 'AAA')").fetchall() == want
    both = con.execute(f"SELECT count(*) FROM obook_bbo('{small}', tickers := 'AAA,BBB')").fetchall()
    assert both == [(len(SMALL_BBO),)]


@pytest.mark.parametrize("value", ["42", "[1, 2]"])
def test_obook_bbo_tickers_of_another_type_is_an_error_naming_it(con, small, value):
    with pytest.raises(duckdb.Error) as err:
        con.execute(f"SELECT * FROM obook_bbo('{small}', tickers := {value})").fetchall()
    assert "tickers must be a list of tickers" in str(err.value)


@pytest.mark.parametrize("macro", ["obook_bbo", "obook_spread", "obook_bbo_grid"])
def test_obook_bbo_tickers_list_with_null_is_an_error_naming_it(con, small, macro):
    """A NULL in the list is no ticker: an error, as None in obook.bbo's list, not dropped."""
    every = ", 1000" if macro == "obook_bbo_grid" else ""
    with pytest.raises(duckdb.Error) as err:
        con.execute(f"SELECT * FROM {macro}('{small}'{every}, tickers := ['AAA', NULL])").fetchall()
    assert "tickers must be text, not NULL (item 2 of 2)" in str(err.value)
    with pytest.raises(obook.ObookError, match="tickers must be text, not None"):
        obook.bbo(small, tickers=["AAA", None])


def test_obook_bbo_on_error_and_prices_in_any_case_give_the_same_rows(con, small):
    want = con.execute(f"SELECT * FROM obook_bbo('{small}', on_error := 'skip', prices := 'decimal')").fetchall()
    got = con.execute(f"SELECT * FROM obook_bbo('{small}', on_error := 'SKIP', prices := 'Decimal')").fetchall()
    assert got == want and len(got) == len(SMALL_BBO)


def test_obook_bbo_relations_made_not_run_beyond_pool_size_bind_and_run_right(small):
    """Relations made with con.sql(...) and not run bind with no query id: more of them than
    the pool has entries is no error ("one query can use at most ..."), and each, run
    later, reads its own arguments' rows."""
    con = install(duckdb.connect(), pool_size=1)          # 2 entries
    try:
        made = [con.sql(f"SELECT count(*) FROM obook_bbo('{small}', tickers := '{t}')")
                for t in ("AAA", "BBB", "AAA,BBB", "BBB,AAA", "BBB")]
        assert [r.fetchall() for r in made] == [[(7,)], [(3,)], [(10,)], [(10,)], [(3,)]]
    finally:
        con.close()


def test_obook_bbo_relation_run_with_more_argument_sets_than_pool_still_clear_error(small):
    """A relation made with con.sql(...) binds leniently (no query id), but running it binds
    again under its query: too many argument sets for the pool is then the clear error."""
    con = install(duckdb.connect(), pool_size=1)          # 2 entries
    try:
        union = " UNION ALL ".join(f"SELECT count(*) FROM obook_bbo('{small}', tickers := '{t}')"
                                   for t in ("AAA", "BBB", "AAA,BBB"))
        with pytest.raises(duckdb.Error, match="at most 2 different argument sets"):
            con.sql(union).fetchall()
    finally:
        con.close()


def test_obook_unit_given_a_bare_path_says_to_json(con, small):
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"SELECT obook_unit('{small}', NULL, 'price_scale')").fetchall()
    assert "obook_unit: give the feed as to_json(path)" in str(e.value) and "JSONDecodeError" not in str(e.value)


def test_obook_depth_view_of_levels_from_a_variable_columns_follow_the_variable(con, small):
    """A view over an obook table macro binds the macro again at each query: its columns are
    those of the arguments then (levels from a variable: 2, then 3 levels a side)."""
    con.execute("SET VARIABLE lv = 2")
    con.execute(f"CREATE VIEW d AS SELECT * FROM obook_depth('{small}', levels := getvariable('lv'), workers := 1)")
    con.execute("SELECT * FROM d")
    two = [d[0] for d in con.description]
    con.execute("SET VARIABLE lv = 3")
    con.execute("SELECT * FROM d")
    three = [d[0] for d in con.description]
    assert "bid_px_2" in two and "bid_px_3" not in two and "ask_orders_3" in three
    assert three == [d[0] for d in con.execute(f"SELECT * FROM obook_depth('{small}', levels := 3)").description]


@pytest.mark.parametrize(("call", "after"), [
    ("obook_depth('{f}', 5)", "after path; its options: workers, format"),
    ("obook_bbo('{f}', 1)", "after path; its options: workers, format"),
    ("obook_bars('{f}', '5 minutes', 2)", "after path, interval; its options: workers, format"),
])
def test_obook_macro_option_given_by_position_is_an_error_naming_the_options(con, small, call, after):
    with pytest.raises(duckdb.Error, match=r"an option is given by name \(name := value\), not by position: "
                                          r"\S+ came " + re.escape(after)):
        con.execute(f"SELECT * FROM {call.format(f=small)}").fetchall()
    assert con.execute(f"SELECT count(*) FROM obook_bars('{small}', '5 minutes')").fetchall()[0][0] > 0
