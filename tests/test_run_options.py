"""The runs' options (obook.tables.runs) in every front end: each keyword of obook.match,
obook.simulate and obook.backtest is declared (or named Python-only, with the reason), with
Python's default, and each declared option is a parameter of every DuckDB macro, polars
scan and command of the run; an option added to one place and not the others fails here."""

from __future__ import annotations

import inspect

import pytest
import typer.main

import obook
from obook.cli import app
from obook.tables import runs

#: run -> (its Python function, its positional inputs, declared options, Python-only options,
#: DuckDB macros (those taking levels), polars scan, command)
RUNS = {
    "match": (obook.match, ("orders",), runs.MATCH, runs.MATCH_PYTHON_ONLY,
              {"obook_match": False, "obook_match_events": False, "obook_match_bbo": False,
               "obook_match_depth": True}, "scan_match", "match"),
    "simulate": (obook.simulate, ("feed", "orders"), runs.SIMULATE, runs.SIMULATE_PYTHON_ONLY,
                 {"obook_simulate": False, "obook_simulate_events": False, "obook_simulate_summary": False,
                  "obook_simulate_bbo": False, "obook_simulate_depth": True}, "scan_simulate", "simulate"),
    "backtest": (obook.backtest.backtest, ("feed", "strategy"), runs.BACKTEST, runs.BACKTEST_PYTHON_ONLY,
                 {f"obook_backtest{t}": False for t in ("", "_orders", "_events", "_positions", "_equity")},
                 "scan_backtest", "backtest"),
}

#: options that are another word on the command line: the flag's parameter
CLI_NAMES = {"day_end": "no_day_end"}


def _python_options(function, inputs) -> dict:
    params = inspect.signature(function).parameters
    assert tuple(params)[:len(inputs)] == inputs
    return {n: p.default for n, p in params.items() if n not in inputs}


@pytest.mark.parametrize("run", RUNS)
def test_runs_python_keywords_are_declared_or_python_only_with_python_defaults(run):
    function, inputs, declared, python_only, *_ = RUNS[run]
    python = _python_options(function, inputs)
    fees = set(runs.BACKTEST_FEES) if run == "backtest" else set()
    names = [o.name for o in declared if o.name not in fees]
    assert sorted(names + list(python_only)) == sorted(python), "an option of the Python function is neither " \
                                                                "declared in obook.tables.runs nor Python-only"
    assert not set(names) & set(python_only)
    for o in declared:
        if o.name not in fees:
            assert python[o.name] == o.default, o.name
    if fees:
        from obook.backtest import Fees

        assert "fees" in python_only
        assert list(inspect.signature(Fees).parameters) == ["maker", "taker", "per"]
        assert [runs.BACKTEST[[o.name for o in runs.BACKTEST].index(n)].default for n in runs.BACKTEST_FEES] == \
            [p.default for p in inspect.signature(Fees).parameters.values()]


@pytest.mark.parametrize("run", RUNS)
def test_runs_duckdb_macros_take_every_declared_option(run):
    _, inputs, declared, _, macros, *_ = RUNS[run]
    con = obook.connect()
    for macro, depth in macros.items():
        rows = con.execute("SELECT parameters FROM duckdb_functions() WHERE function_name = ?", [macro]).fetchall()
        assert len(rows) == 1, macro
        want = [o.name for o in declared if o.name != "levels" or depth]
        heads = ["path" if inputs == ("orders",) else inputs[0]] + list(inputs[1:])
        # (__by_position: where an argument given by position past the inputs lands, to be refused)
        assert rows[0][0] == heads + ["__by_position"] + want, macro
    con.close()


@pytest.mark.parametrize("run", RUNS)
def test_runs_polars_scan_takes_every_python_keyword_but_the_tables(run, tmp_path):
    import obook.polars

    function, inputs, declared, python_only, _, scan, _ = RUNS[run]
    params = inspect.signature(getattr(obook.polars, scan)).parameters
    if run == "backtest":       # its keywords are obook.backtest's, bound before the scan is made
        assert any(p.kind is p.VAR_KEYWORD for p in params.values())
        with pytest.raises(TypeError, match="scan_backtest: .*'bogus'"):
            (tmp_path / "x").write_text("")
            obook.polars.scan_backtest(str(tmp_path / "x"), "x.py:S", bogus=1)
        return
    assert [n for n in params if n not in inputs and n not in ("path", "table")] == [o.name for o in declared]
    for o in declared:
        assert params[o.name].default == o.default, o.name


@pytest.mark.parametrize("run", RUNS)
def test_runs_command_takes_every_declared_option(run):
    _, _, declared, _, _, _, command = RUNS[run]
    click = typer.main.get_command(app).commands[command]
    names = {p.name for p in click.params}
    missing = [o.name for o in declared if CLI_NAMES.get(o.name, o.name) not in names]
    assert missing == [], f"obook {command} has no flag for {missing}"


# ----------------------------------------------------------------- one check on every front end

def _inputs(tmp_path) -> tuple[str, str, str]:
    """(a CSV feed, an order file, a strategy FILE.py:NAME)."""
    from test_backtest_cli import DAY, STRATEGY
    from test_simulate_frontends import ORDERS

    (tmp_path / "day.csv").write_text(DAY)
    (tmp_path / "orders.csv").write_text(ORDERS)
    (tmp_path / "s.py").write_text(STRATEGY)
    return str(tmp_path / "day.csv"), str(tmp_path / "orders.csv"), f"{tmp_path / 's.py'}:Join"


@pytest.mark.parametrize("macro", ["obook_simulate_events", "obook_backtest_orders"])
def test_runs_duckdb_format_empty_is_detected_as_left_out(macro, tmp_path):
    feed, orders, strategy = _inputs(tmp_path)
    second = orders if macro.startswith("obook_simulate") else strategy
    con = obook.connect()
    rows = [con.execute(f"SELECT * FROM {macro}(?, ?{fmt})", [feed, second]).fetchall()
            for fmt in ("", ", format := ''", ", format := NULL")]
    con.close()
    assert rows[0] and rows[1] == rows[0] == rows[2]


@pytest.mark.parametrize("text, spec", [("uniform:1000:5000000", ("uniform", 1000, 5_000_000)),
                                        ("Exponential:2000000", ("exponential", 2_000_000))])
def test_runs_latency_distribution_text_is_the_distribution_in_python_and_polars(text, spec, tmp_path):
    """'uniform:LO:HI' (the form DuckDB and the command line take) is the distribution in
    Python and polars too, drawn alike with the seed."""
    import obook.polars
    from obook.backtest import backtest
    from obook.live.cli_run import load_strategy

    feed, orders, strategy = _inputs(tmp_path)
    want = obook.simulate(feed, orders, latency=spec, seed=3, workers=1).events.to_pylist()
    assert obook.simulate(feed, orders, latency=text, seed=3, workers=1).events.to_pylist() == want
    assert obook.polars.scan_simulate(feed, orders, table="events", latency=text, seed=3).collect().to_dicts() == want
    want = backtest(feed, load_strategy(strategy), order_latency=spec, seed=3).orders.to_pylist()
    assert backtest(feed, load_strategy(strategy), order_latency=text, seed=3).orders.to_pylist() == want
    assert obook.polars.scan_backtest(feed, strategy, table="orders", order_latency=text, seed=3).collect() \
        .to_dicts() == want


@pytest.mark.parametrize("keywords, says", [
    ({"date": "2026-13-45"}, r"--date / date= '2026-13-45': not a day"),
    ({"timer": "5"}, r"timer '5': give an integer of ns"),
    ({"seed": -1}, r"seed must be an integer from 0"),
    ({"order_latency": "abc"}, r"order_latency 'abc'"),
    ({"feed_latency": ("uniform", 5, 1)}, r"feed_latency uniform:5:1: give uniform:LO:HI with 0 <= LO"),
    ({"fees": 5}, r"fees must be obook.backtest.Fees"),
    ({"format": "xyz"}, r"unknown feed format 'xyz'"),
    ({"on_error": "ignore"}, r"on_error must be one of raise, skip"),
    ({"capital": -1}, r"capital must be a number > 0"),
    ({"tickers": 5}, r"tickers must be a list of tickers"),
    ({"interval": float("nan")}, r"interval must be a number of seconds"),
    ({"day_end": "no"}, r"day_end must be True or False"),
    ({"queue": "xyz"}, r"queue model 'xyz'"),
])
def test_runs_polars_scan_backtest_options_checked_when_made(keywords, says, tmp_path):
    """scan_backtest checks obook.backtest's keywords when the scan is made, as scan_match,
    scan_simulate and the DuckDB macros check theirs, not at collect time."""
    import obook.polars

    feed, _, strategy = _inputs(tmp_path)
    with pytest.raises(obook.ObookError, match=says):
        obook.polars.scan_backtest(feed, strategy, table="orders", **keywords)


@pytest.mark.parametrize("option, says", [
    ("queue := 'xyz'", r"queue model 'xyz'"),
    ("interval := 'nan'::DOUBLE", r"interval must be a number of seconds"),
    ("order_latency := 'uniform:5:1'", r"order_latency uniform:5:1: give uniform:LO:HI with 0 <= LO"),
    ("response_latency := 700000000000000", r"response_latency must be between 0 and"),
])
def test_runs_duckdb_backtest_options_checked_when_bound(option, says, tmp_path):
    """obook_backtest's macros check the options scan_backtest checks when made as the query
    is bound (a relation made and not run fails too), not when the run's rows are read."""
    import duckdb

    feed, _, strategy = _inputs(tmp_path)
    con = obook.connect()
    with pytest.raises(duckdb.Error, match=says):
        con.sql(f"SELECT * FROM obook_backtest_orders(?, ?, {option})", params=[feed, strategy])
    con.close()


def test_runs_result_table_of_unknown_name_is_obook_error_naming_the_tables(tmp_path):
    """``.table(name)`` of a run's result: a name it has not is an ObookError listing those
    it has (a backtest's says backtest); the attribute is an AttributeError, as hasattr wants."""
    from obook.backtest import backtest
    from obook.live.cli_run import load_strategy

    feed, orders, strategy = _inputs(tmp_path)
    results = {"match": (obook.match(orders, tables=("fills",)), r"^unknown table 'nope'; choose from fills, "
                                                               r"events, bbo, depth$"),
               "simulation": (obook.simulate(feed, orders), r"^no table 'nope' in this simulation; it has fills, "),
               "backtest": (backtest(feed, load_strategy(strategy)), r"^no table 'nope' in this backtest; it has "
                                                                     r"orders, events, fills, positions, equity$")}
    for result, says in results.values():
        with pytest.raises(obook.ObookError, match=says):
            result.table("nope")
        assert not hasattr(result, "nope")


def test_runs_backtest_feed_in_several_files_on_every_front_end(tmp_path):
    """One feed cut into files, as a list or a glob pattern: obook.backtest, its DuckDB macros
    and scan_backtest take it as obook.simulate and its front ends do, the rows of the whole file."""
    import obook.polars
    from obook.backtest import backtest
    from obook.live.cli_run import load_strategy

    feed, _, strategy = _inputs(tmp_path)
    lines = open(feed).read().splitlines(keepends=True)
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "a.csv").write_text("".join(lines[:30]))
    (tmp_path / "parts" / "b.csv").write_text("".join(lines[30:]))
    parts, pattern = [str(tmp_path / "parts" / n) for n in ("a.csv", "b.csv")], str(tmp_path / "parts" / "*.csv")
    want = backtest(feed, load_strategy(strategy)).events.to_pylist()
    assert want
    con = obook.connect()
    for source in (parts, pattern):
        assert backtest(source, load_strategy(strategy)).events.to_pylist() == want
        assert obook.polars.scan_backtest(source, strategy, table="events").collect().to_dicts() == want
        got = con.sql("SELECT * FROM obook_backtest_events(?, ?)", params=[source, strategy]).arrow()
        assert (got.read_all() if hasattr(got, "read_all") else got).to_pylist() == want
    con.close()


@pytest.mark.parametrize("value, day", [("TIMESTAMP '2024-01-02 00:00:00'", "2024-01-02"),
                                        ("TIMESTAMP_NS '2024-01-03 00:00:00'", "2024-01-03"),
                                        ("DATE '2024-01-04'", "2024-01-04")])
def test_runs_duckdb_date_given_a_timestamp_at_midnight_is_its_day(value, day, tmp_path):
    """``date :=`` a TIMESTAMP at midnight (no zone) is its day, as a datetime at midnight is
    in Python; one with a time of day or a zone is refused, as there."""
    import datetime as dt

    import duckdb

    _, orders, _ = _inputs(tmp_path)
    stamps = obook.match(orders, date=dt.datetime.fromisoformat(day)).events.column("timestamp")
    want = stamps.cast("int64").to_pylist()
    con = obook.connect()
    got = [r[0] for r in con.execute(f"SELECT epoch_ns(timestamp) FROM obook_match_events(?, date := {value})",
                                     [orders]).fetchall()]
    assert got == want and got
    for refused in ("TIMESTAMP '2024-01-02 10:00:00'", "TIMESTAMPTZ '2024-01-02 00:00:00+00'"):
        with pytest.raises(duckdb.Error, match=r"--date / date= '2024-01-02 .*': not a day YYYY-MM-DD"):
            con.execute(f"SELECT * FROM obook_match_events(?, date := {refused})", [orders]).fetchall()
    con.close()


#: each run's macros: (the call up to its positional inputs, what the error says they are)
RUN_CALLS = [("obook_match('{o}'", "path"), ("obook_match_depth('{o}'", "path"),
             ("obook_simulate('{f}', '{o}'", "feed, orders"), ("obook_simulate_summary('{f}', '{o}'", "feed, orders"),
             ("obook_backtest('{f}', '{s}'", "feed, strategy"), ("obook_backtest_equity('{f}', '{s}'", "feed, strategy")]


@pytest.mark.parametrize("macro, heads", RUN_CALLS)
def test_runs_duckdb_option_given_with_equals_says_name_colon_equals(macro, heads, tmp_path):
    """``format = 'csv'`` (a comparison, which DuckDB passes by position) is named as such, as
    by the table macros, not as a strange value of the first option."""
    import duckdb

    feed, orders, strategy = _inputs(tmp_path)
    con = obook.connect()
    with pytest.raises(duckdb.Error, match=f"given as name := value: name = value is a comparison, whose true or "
                                           f"false was given by position after {heads}"):
        con.execute(f"SELECT * FROM {macro.format(f=feed, o=orders, s=strategy)}, format = 'csv')").fetchall()
    con.close()


@pytest.mark.parametrize("macro, heads", RUN_CALLS)
@pytest.mark.parametrize("value", ["5", "'csv'"])
def test_runs_duckdb_option_given_by_position_is_an_error_naming_the_options(macro, heads, value, tmp_path):
    """A value after the run's inputs is no option of it (as in Python, where the options are
    keywords): an error naming the options, not the value taken for the first one."""
    import duckdb

    feed, orders, strategy = _inputs(tmp_path)
    con = obook.connect()
    call = macro.format(f=feed, o=orders, s=strategy)
    with pytest.raises(duckdb.Error, match=r"an option is given by name \(name := value\), not by position: "
                                           rf"\S+ came after {heads}; its options: \w+, "):
        con.execute(f"SELECT * FROM {call}, {value})").fetchall()
    assert con.execute(f"SELECT count(*) FROM {call})").fetchall()[0][0] >= 0
    con.close()


def test_runs_cli_backtest_interval_beyond_floats_of_ns_one_line_error(tmp_path):
    from hostile_support import cli_error

    feed, _, strategy = _inputs(tmp_path)
    line = cli_error("backtest", feed, "--strategy", strategy, "--interval", "1e300")
    assert line == "error: --interval 1e+300 s: give 0.001 s (the feed's time unit) to 604800 s (a week)"


@pytest.mark.parametrize("option, says", [
    ("workers := 100000000000000000000", r"workers 100000000000000000000 is beyond 64 bits \(an integer from "
                                         r"-9223372036854775808 to 9223372036854775807\)"),
    ("tick := -100000000000000000000", r"tick -100000000000000000000 is beyond 64 bits"),
])
def test_runs_duckdb_integer_beyond_64_bits_says_so_not_that_it_is_no_whole_number(option, says, tmp_path):
    import duckdb

    _, orders, _ = _inputs(tmp_path)
    con = obook.connect()
    with pytest.raises(duckdb.Error, match=says):
        con.execute(f"SELECT * FROM obook_match(?, {option})", [orders]).fetchall()
    con.close()


def test_runs_polars_scan_backtest_interval_below_the_feeds_unit_named_with_that_unit_at_collect(tmp_path):
    """The feed's time unit is the feed's: an interval shorter than it is an error naming it
    (a CSV feed's ms), not one of ns made up when the scan is made."""
    import polars as pl

    import obook.polars

    feed, _, strategy = _inputs(tmp_path)
    scan = obook.polars.scan_backtest(feed, strategy, table="orders", interval=1e-10)
    with pytest.raises((obook.ObookError, pl.exceptions.ComputeError),
                       match=r"interval 1e-10 s: give 0.001 s \(the feed's time unit\)"):
        scan.collect()


@pytest.mark.parametrize("spec, says", [("nofile.py:X", r"strategy: no such file nofile\.py"),
                                        ("Join", r"strategy 'Join': give FILE\.py:NAME or module:NAME"),
                                        ("nofile.py:X:Y", r"strategy 'nofile\.py:X:Y': give FILE\.py:NAME or "
                                                          r"module:NAME, one name after one colon")])
def test_runs_strategy_text_that_names_no_file_refused_when_the_scan_is_made_or_bound(spec, says, tmp_path):
    """A strategy FILE.py:NAME whose file is not there (or text of no such form) is refused by
    scan_backtest when made and by the DuckDB macros when bound, as obook.backtest refuses
    it at once (the strategy itself is loaded when the run starts)."""
    import duckdb

    import obook.polars

    feed, _, _ = _inputs(tmp_path)
    with pytest.raises(obook.ObookError, match=says):
        obook.polars.scan_backtest(feed, spec)
    con = obook.connect()
    with pytest.raises(duckdb.Error, match=f"obook_backtest: {says}"):
        con.sql("SELECT * FROM obook_backtest(?, ?)", params=[feed, spec])
    con.close()


def test_runs_duckdb_list_option_given_a_struct_names_the_option(tmp_path):
    import duckdb

    _, orders, _ = _inputs(tmp_path)
    con = obook.connect()
    with pytest.raises(duckdb.Error, match=r"instruments must be a list of names \(\['AAA', 'BBB'\]\) or text, not "
                                           r"\{'a': 1\}"):
        con.execute("SELECT * FROM obook_match(?, instruments := {'a': 1})", [orders]).fetchall()
    con.close()


def test_runs_latency_given_a_whole_float_is_whole_ns_on_every_front_end(tmp_path):
    """2e6 (a float equal to a whole number) is 2000000 ns in obook.simulate as in obook.backtest,
    and SQL's 2e6 (a DOUBLE) too; 1.5 is refused by each."""
    import duckdb

    from obook.backtest import backtest
    from obook.live.cli_run import load_strategy

    feed, orders, strategy = _inputs(tmp_path)
    con = obook.connect()
    events = obook.simulate(feed, orders, latency=2_000_000, workers=1).events.to_pylist()
    assert obook.simulate(feed, orders, latency=2e6, workers=1).events.to_pylist() == events
    q = "SELECT * FROM obook_simulate_events(?, ?, latency := {})"
    assert con.execute(q.format("2e6"), [feed, orders]).fetchall() == \
        con.execute(q.format("2000000"), [feed, orders]).fetchall()
    want = backtest(feed, load_strategy(strategy), order_latency=2e6).orders.to_pylist()
    q = "SELECT * FROM obook_backtest_orders(?, ?, order_latency := {})"
    got = con.execute(q.format("2e6"), [feed, strategy]).fetchall()
    assert len(got) == len(want) and got == con.execute(q.format("2000000"), [feed, strategy]).fetchall()
    for refused in (lambda: obook.simulate(feed, orders, latency=1.5),
                    lambda: con.execute(q.format("1.5"), [feed, strategy]).fetchall()):
        with pytest.raises((obook.ObookError, duckdb.Error), match="whole number of ns|give an integer of ns"):
            refused()
    con.close()
