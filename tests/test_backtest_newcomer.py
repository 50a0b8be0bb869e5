"""What a newcomer or a careless caller does to a backtest: arguments of the wrong kind or
out of range, strategies that return or send nonsense, output folders in the way. Each is
an ObookError (a StrategyError for the strategy's own doings) naming what is wrong, before
the day runs when it can be; the command line keeps its output folder consistent."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from obook.backtest import StrategyError, backtest, compiled
from obook.backtest.orders import Order
from obook.errors import ObookError
from obook.live.risk import RiskGate

from test_backtest_cli import DAY, STRATEGY as STRATEGIES   # the same day and Join / Broken strategies


def _day(tmp_path) -> str:
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    return str(feed)


def _strategies(tmp_path) -> str:
    path = tmp_path / "s.py"
    path.write_text(STRATEGIES)
    return str(path)


class Once:
    """Sends the order ``make(bid)`` once, at the first book with a bid."""

    def __init__(self, make):
        self.make, self.sent = make, False

    def on_book(self, ctx):
        bid = ctx.top()[0]
        if self.sent or bid is None:
            return None
        self.sent = True
        return self.make(bid)


def _open_gate() -> RiskGate:
    """A risk gate that lets (nearly) everything through to the venue."""
    return RiskGate(max_qty=(1 << 62), max_notional=(1 << 63) - 1, max_orders_per_second=10**9, band_bps=10**12)


# ------------------------------------------------------------------ what a strategy sends

@pytest.mark.parametrize("make, says", [
    (lambda bid: [Order("enter", "AAA", "B", 2**63, bid, ref=1)], "quantity 9223372036854775808 is beyond 64 bits"),
    (lambda bid: [Order("enter", "AAA", "B", 10, bid, ref=2**70)], "ref 1180591620717411303424 is beyond 64 bits"),
    (lambda bid: [Order("enter", "AAA", "B", "10", bid, ref=1)], "quantity '10' is no whole number"),
    (lambda bid: [Order("enter", "AAA", "B", 10, bid, ref="a")], "ref 'a' is no whole number"),
    (lambda bid: [Order("enter", "AAA", "B", 10, float("inf"), ref=1)], "price inf is NaN or infinite"),
    (lambda bid: "enter", "returned 'enter', not a list of orders"),
    (lambda bid: {"kind": "enter"}, "not a list of orders"),
    (lambda bid: ["hello"], "cannot send: 'hello': no order"),
])
def test_send_each_unreadable_order_is_strategy_error_naming_it(tmp_path, make, says):
    with pytest.raises(StrategyError, match=says) as e:
        backtest(_day(tmp_path), Once(make), format="csv")
    assert e.value.partial is not None


def test_order_numbers_negative_limit_price_past_open_gate_is_strategy_error(tmp_path):
    make = lambda bid: [Order("enter", "AAA", "B", 10, -1000, ref=1)]       # noqa: E731
    with pytest.raises(StrategyError, match="price -1000 is below 0"):
        backtest(_day(tmp_path), Once(make), format="csv", risk=_open_gate())


def test_order_numbers_numpy_notional_beyond_64_bits_is_refused_by_gate(tmp_path):
    # 2**32 x 2**32 wraps to 0 in numpy's int64: the gate must multiply exact integers
    make = lambda bid: [Order("enter", "AAA", "B", np.int64(1 << 32), np.int64(1 << 32), ref=1)]   # noqa: E731
    gate = RiskGate(max_qty=1 << 40, band_bps=10**12)
    r = backtest(_day(tmp_path), Once(make), format="csv", risk=gate)
    assert r.orders.column("refused").to_pylist() == ["notional"]


class Yields:
    """Returns a generator that yields one order, then raises ``error`` (the strategy's own
    code runs while its orders are read)."""

    def __init__(self, error):
        self.error = error

    def on_book(self, ctx):
        def orders():
            yield Order("enter", "AAA", "B", 10, 990, ref=ctx.time)
            raise self.error
        return orders()


@pytest.mark.parametrize("error", [ValueError("late boom"), TypeError("late boom")])
def test_send_each_generator_raising_is_strategy_error_naming_the_call(tmp_path, error):
    with pytest.raises(StrategyError, match=rf"^the strategy Yields.on_book raised {type(error).__name__}: late boom "
                                            r"\(at time \d+\)$") as e:
        backtest(_day(tmp_path), Yields(error), format="csv")
    assert "late boom" in e.value.traceback and ", in orders\n" in e.value.traceback
    assert e.value.partial is not None


def test_send_context_top_replaced_by_strategy_gate_reads_the_book(tmp_path):
    class Replaces:
        """Replaces its context's top() by one far from the book, then joins the bid."""
        sent = False

        def on_book(self, ctx):
            bid = ctx.top()[0]
            ctx.top = lambda *a: (1, 1, 2, 1)
            if self.sent or bid is None:
                return None
            self.sent = True
            return [Order("enter", "AAA", "B", 10, bid, ref=1)]

    r = backtest(_day(tmp_path), Replaces(), format="csv")
    assert r.orders.column("refused").to_pylist() == [None]
    assert r.events.column("event").to_pylist()[0] == "accepted"


@pytest.mark.parametrize("raising", ["on_book", "timer", "tickers"])
def test_strategy_object_attribute_lookup_raising_is_strategy_error_naming_it(tmp_path, raising):
    class Proxy:
        """Forwards what it lacks to a remote object: here the look-up itself fails."""

        def on_book(self, ctx):
            return None

        def __getattr__(self, name):
            if name == raising:
                raise RuntimeError(f"no connection for {name}")
            raise AttributeError(name)

    if raising == "on_book":
        del Proxy.on_book
    with pytest.raises(StrategyError, match=rf"^the strategy Proxy: looking up its {raising} raised RuntimeError: "
                                            rf"no connection for {raising}$") as e:
        backtest(_day(tmp_path), Proxy(), format="csv")
    assert "no connection" in e.value.traceback


def test_context_unknown_instrument_is_error_naming_it(tmp_path):
    class Looks:
        def on_book(self, ctx):
            ctx.top("NOPE")

    with pytest.raises(StrategyError, match=r"instrument 'NOPE': not one the strategy sees \(AAA\)"):
        backtest(_day(tmp_path), Looks(), format="csv")


# ------------------------------------------------------------------ backtest's arguments

@pytest.mark.parametrize("options, says", [
    (dict(tickers=5), "tickers must be"),
    (dict(tickers=[b"AAA"]), "tickers must be text"),
    (dict(fees="0.1"), "fees must be obook.backtest.Fees"),
    (dict(risk="strict"), "risk must be an obook.live.risk.RiskGate"),
    (dict(risk=RiskGate(max_notional=2**300)), "risk max_notional must be an integer"),
    (dict(on=["bbo"]), r"on must be one of bbo, book, not \['bbo'\]"),
    (dict(on="trades"), "on must be one of bbo, book, not 'trades'"),
    (dict(timer=0), "timer 0: the strategy has no on_timer to call"),
    (dict(timer="x"), "timer 'x': give an integer of ns"),
    (dict(timer=1e9), r"^timer 1000000000.0 \(a float\): give an integer of ns$"),
    (dict(timer_start="x"), "timer_start must be an integer"),
    (dict(timer_start=5.0), "timer_start must be an integer from 0 to \\d+, not 5.0"),
    (dict(seed=1.0, order_latency=("uniform", 0, 5)), "seed must be an integer from 0 to \\d+, not 1.0"),
    (dict(timer_start=10**30), "timer_start must be an integer"),
    (dict(interval="60"), "interval must be a number of seconds"),
    (dict(interval=float("nan")), "interval must be a number of seconds"),
    (dict(interval=1e-9), r"interval 1e-09 s: give 0.001 s \(the feed's time unit\)"),
    (dict(interval=1e12), "to 604800 s"),
    (dict(interval=1e300), r"interval 1e\+300 s: give 0.001 s \(the feed's time unit\) to 604800 s"),
    (dict(capital="x"), "capital must be a number > 0"),
    (dict(capital=0), "capital must be a number > 0"),
    (dict(format=5), "format must be a feed format's name"),
    (dict(seed=-1, order_latency=("uniform", 0, 5)), "seed must be an integer from 0"),
    (dict(pipeline="no"), "pipeline must be True or False"),
    (dict(day_end="no"), "day_end must be True or False"),
    (dict(order_latency=1.5), "order_latency 1.5: give a whole number of ns"),
    (dict(order_latency=True), "latency True: give a whole number of ns"),
    (dict(feed_latency=[1, 2]), r"feed_latency \[1, 2\]: give an integer of ns"),
    (dict(response_latency="nope.csv"), "response_latency .*there is no file nope.csv"),
])
def test_backtest_bad_argument_is_obook_error_naming_it(tmp_path, options, says):
    from obook.live.cli_run import load_strategy

    with pytest.raises(ObookError, match=says):
        backtest(_day(tmp_path), load_strategy(f"{_strategies(tmp_path)}:Join"), **{"format": "csv", **options})


class CountBook:
    """Counts its on_book calls; ``on``: what they are called on."""

    def __init__(self, on):
        self.on, self.n = on, 0

    def on_book(self, ctx):
        self.n += 1


@pytest.mark.parametrize("attribute, argument", [("BOOK", None), ("Book", None), ("bbo", "BOOK"), ("bbo", "Book")])
def test_backtest_on_in_any_case_calls_on_that_word(tmp_path, attribute, argument):
    want, got = CountBook("book"), CountBook(attribute)
    backtest(_day(tmp_path), want, format="csv")
    backtest(_day(tmp_path), got, format="csv", on=argument)
    bbo = CountBook("bbo")
    backtest(_day(tmp_path), bbo, format="csv")
    assert got.n == want.n > bbo.n


def test_backtest_queue_fifo_in_any_case_is_fifo(tmp_path):
    r = backtest(_day(tmp_path), f"{_strategies(tmp_path)}:Join", format="csv", queue="FIFO")
    assert r.orders.column("ref").to_pylist() == [1]


def test_backtest_strategy_on_attribute_unknown_is_obook_error_listing_the_words(tmp_path):
    with pytest.raises(ObookError, match="the strategy's on must be one of bbo, book, not 'trades'"):
        backtest(_day(tmp_path), CountBook("trades"), format="csv")


def test_fees_per_in_any_case_is_that_word():
    from obook.backtest import Fees

    assert Fees(taker=2, per="BPS").per == "bps" and Fees(per="Share").per == "share"
    with pytest.raises(ObookError, match="fees per must be one of share, bps, not 'lots'"):
        Fees(per="lots")


@pytest.mark.parametrize("strategy, says", [
    (None, "strategy None is no strategy"),
    (5, "strategy 5 is no strategy"),
    (Once, "strategy Once is a class: give an instance"),
])
def test_backtest_what_is_no_strategy_is_obook_error(tmp_path, strategy, says):
    with pytest.raises(ObookError, match=says):
        backtest(_day(tmp_path), strategy, format="csv")


@pytest.mark.parametrize("feed", [5, None])
def test_backtest_feed_of_wrong_type_is_obook_error(feed):
    with pytest.raises(ObookError, match="the feed path must be text"):
        backtest(feed, lambda top: None)


def test_backtest_strategy_as_text_is_loaded(tmp_path):
    r = backtest(_day(tmp_path), f"{_strategies(tmp_path)}:Join", format="csv")
    assert r.orders.column("ref").to_pylist() == [1]


def test_backtest_whole_float_latency_is_whole_ns(tmp_path):
    r = backtest(_day(tmp_path), f"{_strategies(tmp_path)}:Join", format="csv", order_latency=2e6)
    assert r.orders.column("arrival").to_pylist()[0] == r.orders.column("sent").to_pylist()[0] + 2


def test_compiled_arguments_of_one_text_are_one_name():
    c = compiled(lambda *a: 0, on="timer", timer=10**6, tickers="AAA,BBB")
    assert c.on == ("timer",) and c.tickers == ("AAA", "BBB")


def test_compiled_on_in_any_case_is_that_word():
    assert compiled(lambda *a: 0, on=("BBO", "Orders")).on == ("bbo", "orders")


@pytest.mark.parametrize("options, says", [
    (dict(on=("bbo", "trades")), "on must be one of bbo, book, orders, timer, not 'trades'"),
    (dict(on="timer", timer="x"), "timer 'x': give an integer of ns"),
])
def test_compiled_unknown_call_or_timer_of_the_wrong_kind_is_obook_error_when_made(options, says):
    with pytest.raises(ObookError, match=says):
        compiled(lambda *a: 0, **options)


@pytest.mark.parametrize("fn, state, says", [
    (lambda *a: 0, None, "a compiled strategy is a numba function"),
    (None, [1.5], "state must be whole numbers of 64 bits"),
    (None, np.arange(10, dtype=np.int64)[::2],
     r"state must be one contiguous row of int64 \(np.zeros\(n, np.int64\)\), not an array of shape \(5,\) with a step"),
    (None, np.zeros((2, 2), np.int64), r"state must be one contiguous row .*not an array of shape \(2, 2\)"),
    (None, [[1, 2], [3, 4]], r"state must be one contiguous row .*not an array of shape \(2, 2\)"),
])
def test_compiled_bad_function_or_state_is_obook_error(tmp_path, fn, state, says):
    with pytest.raises(ObookError, match=says):
        backtest(_day(tmp_path), compiled(fn, state=state), format="csv")


# ------------------------------------------------------------------ the summary

def test_sharpe_short_interval_over_long_span_makes_no_grid_and_matches_dense():
    from obook.backtest import tables

    t = np.array([5, 9, 9, 400, 1_000_000_000_000_000], np.int64)
    vals = np.array([1.0, 2.0, 1.5, -3.0, 4.0])
    assert tables._sharpe(t, vals, 1) is not None           # 10**15 steps: never materialised
    t2, interval = t[:4], 7
    dense = tables._sharpe(t2, vals[:4], interval)
    old, tables.GRID_ROWS = tables.GRID_ROWS, 0
    try:
        assert tables._sharpe(t2, vals[:4], interval) == pytest.approx(dense, rel=1e-12)
    finally:
        tables.GRID_ROWS = old


# ------------------------------------------------------------------ writing

def test_result_write_failure_leaves_no_table_and_no_temporary_file(tmp_path, monkeypatch):
    import pyarrow.parquet

    from obook.errors import OutputError

    r = backtest(_day(tmp_path), f"{_strategies(tmp_path)}:Join", format="csv")
    out = tmp_path / "out"
    out.mkdir()
    real, calls = pyarrow.parquet.write_table, []

    def failing(table, where, *a, **k):
        calls.append(where)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(table, where, *a, **k)

    monkeypatch.setattr(pyarrow.parquet, "write_table", failing)
    with pytest.raises(OutputError, match="No space left on device"):
        r.write(str(out / "bt"))
    assert list(out.iterdir()) == []


def test_result_write_a_folder_under_a_table_name_writes_no_table(tmp_path):
    from obook.errors import OutputError

    r = backtest(_day(tmp_path), f"{_strategies(tmp_path)}:Join", format="csv")
    out = tmp_path / "out"
    (out / "bt.fills.parquet").mkdir(parents=True)
    with pytest.raises(OutputError, match="bt.fills.parquet: is a directory"):
        r.write(str(out / "bt"))
    assert [p.name for p in out.iterdir()] == ["bt.fills.parquet"]


def test_result_write_ctrl_c_between_renames_names_every_table(tmp_path, monkeypatch, python_sigint):
    from interrupt_support import ctrl_c_after_first_replace

    r = backtest(_day(tmp_path), f"{_strategies(tmp_path)}:Join", format="csv")
    out = tmp_path / "out"
    out.mkdir()
    renamed = ctrl_c_after_first_replace(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        r.write(str(out / "bt"))
    assert renamed
    assert sorted(p.name for p in out.iterdir()) == [f"bt.{t}.parquet" for t in
                                                     ("equity", "events", "fills", "orders", "positions")]


def test_result_write_ctrl_c_again_while_temp_files_go_leaves_none(tmp_path, monkeypatch, python_sigint):
    """A second Ctrl-C that lands as the first temp file goes (a user pressing it twice) cut
    the clean-up short: the other temp files stayed beside the tables. It now waits."""
    import pyarrow.parquet

    from interrupt_support import ctrl_c_at_first_unlink

    r = backtest(_day(tmp_path), f"{_strategies(tmp_path)}:Join", format="csv")
    out = tmp_path / "out"
    out.mkdir()
    real_write, calls, again = pyarrow.parquet.write_table, [], []

    def interrupted(table, where, *a, **k):
        calls.append(where)
        if len(calls) == 3:                      # two temp files written: Ctrl-C
            again.append(ctrl_c_at_first_unlink(monkeypatch))
            raise KeyboardInterrupt
        return real_write(table, where, *a, **k)

    monkeypatch.setattr(pyarrow.parquet, "write_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        r.write(str(out / "bt"))
    assert again and again[0], "the clean-up removed no temp file"
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("prefix, error, says", [
    (None, "ObookError", "give the tables' prefix, a path such as DIR/backtest, not None"),
    ("", "ObookError", "give the tables' prefix"),
    ("{tmp}", "ObookError", "a folder, not a prefix: give one in it, such as {tmp}/backtest"),
    ("{tmp}/nodir/bt", "OutputError", "{tmp}/nodir/bt: write failed: there is no folder {tmp}/nodir"),
])
def test_result_write_prefix_none_folder_or_in_no_folder_is_error_naming_it(tmp_path, prefix, error, says):
    import obook.errors

    r = backtest(_day(tmp_path), f"{_strategies(tmp_path)}:Join", format="csv")
    out = tmp_path / "out"
    out.mkdir()
    before = sorted(tmp_path.iterdir())
    with pytest.raises(getattr(obook.errors, error), match=re.escape(says.format(tmp=out))):
        r.write(prefix if prefix is None else prefix.format(tmp=out))
    assert sorted(tmp_path.iterdir()) == before and list(out.iterdir()) == []


def test_result_write_error_names_the_table_not_the_temporary_file(tmp_path, monkeypatch):
    import pyarrow.parquet

    from obook.errors import OutputError

    r = backtest(_day(tmp_path), f"{_strategies(tmp_path)}:Join", format="csv")

    def failing(table, where, *a, **k):
        raise FileNotFoundError(2, f"Failed to open local file '{where}'. Detail: [errno 2] No such file")

    monkeypatch.setattr(pyarrow.parquet, "write_table", failing)
    with pytest.raises(OutputError) as e:
        r.write(str(tmp_path / "bt"))
    assert str(e.value) == f"{tmp_path}/bt.orders.parquet: write failed: No such file or directory"


def _cli(capsys, *args):
    from cli_support import cli_run

    return cli_run(capsys, "backtest", *map(str, args))


def test_cli_output_of_stopped_run_replaces_earlier_complete_tables(tmp_path, capsys):
    day, s, out = _day(tmp_path), _strategies(tmp_path), tmp_path / "out"
    assert _cli(capsys, day, "--strategy", f"{s}:Join", "-f", "csv", "-o", out)[0] == 0
    code, err = _cli(capsys, day, "--strategy", f"{s}:Broken", "-f", "csv", "-o", out)
    assert code == 1 and f"(the rows before it are in {out}/backtest.TABLE.parquet.partial)" in err
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([f"backtest.{t}.parquet.partial" for t in ("orders", "events", "fills", "positions",
                                                                       "equity")] + ["run.json"])
    assert _cli(capsys, day, "--strategy", f"{s}:Join", "-f", "csv", "-o", out)[0] == 0
    assert not list(out.glob("*.partial")) and json.loads((out / "summary.json").read_text())["orders"] == 1


def test_cli_output_that_is_a_file_is_refused_before_the_run(tmp_path, capsys):
    day, s = _day(tmp_path), _strategies(tmp_path)
    (tmp_path / "taken").write_text("")
    code, err = _cli(capsys, day, "--strategy", f"{s}:Broken", "-f", "csv", "-o", tmp_path / "taken")
    assert code == 1 and err == f"error: {tmp_path / 'taken'}: exists and is not a directory\n"


def test_cli_failed_write_leaves_no_empty_output_folder(tmp_path, capsys, monkeypatch):
    from obook.backtest import BacktestResult
    from obook.errors import OutputError

    def full(self, prefix, suffix=""):
        raise OutputError(f"{prefix}: write failed: No space left on device")

    monkeypatch.setattr(BacktestResult, "write", full)
    day, s, out = _day(tmp_path), _strategies(tmp_path), tmp_path / "new"
    code, err = _cli(capsys, day, "--strategy", f"{s}:Join", "-f", "csv", "-o", out)
    assert code == 1 and "No space left on device" in err and not out.exists()


def test_cli_day_that_fails_of_several_is_named(tmp_path, capsys):
    s = _strategies(tmp_path)
    days = []
    for d in ("2024-01-02", "2024-01-03"):
        (tmp_path / f"{d}.csv").write_text(DAY)
        days.append(tmp_path / f"{d}.csv")
    code, err = _cli(capsys, *days, "--strategy", f"{s}:Broken", "-f", "csv")
    assert code == 1 and f"error: day 2024-01-02 ({days[0]}): the strategy Broken(top) raised RuntimeError" in err


def test_cli_interval_beyond_a_week_is_one_line_error(tmp_path, capsys):
    from cli_support import cli_error

    err = cli_error(capsys, "backtest", _day(tmp_path), "--strategy", f"{_strategies(tmp_path)}:Join", "-f", "csv",
                    "--interval", "1e12")
    assert "interval 1000000000000.0 s: give 0.001 s (the feed's time unit) to 604800 s (a week)" in err


def test_strategy_calling_sys_exit_is_strategy_error_with_tables_so_far(tmp_path, capsys):
    """sys.exit() in a strategy stopped the command with its code, no line and no tables."""
    def leave(bid):
        raise SystemExit(3)

    with pytest.raises(StrategyError, match=r"the strategy Once.on_book called sys.exit\(3\)") as e:
        backtest(_day(tmp_path), Once(leave), format="csv")
    assert e.value.partial is not None
    s = tmp_path / "leave.py"
    s.write_text("import sys\nclass Leave:\n    def __call__(self, top):\n        sys.exit(3)\n")
    code, err = _cli(capsys, _day(tmp_path), "--strategy", f"{s}:Leave", "-f", "csv", "-o", tmp_path / "out")
    assert code == 1 and "error: the strategy Leave(top) called sys.exit(3)" in err
    assert (tmp_path / "out" / "backtest.orders.parquet.partial").exists()


def test_duckdb_backtest_latency_as_a_number_reads_as_its_text(tmp_path):
    import obook

    day, s = _day(tmp_path), _strategies(tmp_path)
    con = obook.connect()
    q = "SELECT count(*) FROM obook_backtest_orders('{}', '{}:Join', order_latency := {}, format := 'csv')"
    assert con.sql(q.format(day, s, 1000)).fetchall() == con.sql(q.format(day, s, "'1000'")).fetchall() == [(1,)]


@pytest.mark.parametrize("tickers", ["['AAA']", "'AAA'"])
def test_duckdb_backtest_tickers_as_a_list_or_text_are_the_same(tmp_path, tickers):
    import obook

    q = "SELECT count(*) FROM obook_backtest_orders('{}', '{}:Join', tickers := {}, format := 'csv')"
    assert obook.connect().sql(q.format(_day(tmp_path), _strategies(tmp_path), tickers)).fetchall() == [(1,)]


def test_duckdb_backtest_latency_distribution_unreadable_names_which_latency(tmp_path):
    import duckdb

    import obook

    q = "SELECT count(*) FROM obook_backtest_orders('{}', '{}:Join', feed_latency := 'uniform:5', format := 'csv')"
    with pytest.raises(duckdb.Error, match="feed_latency 'uniform:5': give uniform:LO:HI"):
        obook.connect().sql(q.format(_day(tmp_path), _strategies(tmp_path))).fetchall()


@pytest.mark.parametrize("latency", [("uniform", "a", "b"), ("exponential", None)])
def test_backtest_latency_distribution_parameters_not_numbers_obook_error(tmp_path, latency):
    with pytest.raises(ObookError, match="its parameters must be numbers"):
        backtest(_day(tmp_path), Once(lambda bid: None), format="csv", order_latency=latency)


@pytest.mark.parametrize("tickers", ["", " , ", []])
def test_backtest_tickers_naming_none_is_an_error_not_every_ticker(tmp_path, tickers):
    import duckdb

    import obook
    from obook.backtest import compiled

    day, s = _day(tmp_path), _strategies(tmp_path)
    with pytest.raises(obook.ObookError, match="--tickers / tickers=: no ticker given"):
        obook.backtest(day, f"{s}:Join", tickers=tickers, format="csv")
    with pytest.raises(obook.ObookError, match="--tickers / tickers=: no ticker given"):
        compiled(lambda: 0, tickers=tickers)
    if isinstance(tickers, str):
        q = f"SELECT count(*) FROM obook_backtest_orders('{day}', '{s}:Join', tickers := '{tickers}', format := 'csv')"
        with pytest.raises(duckdb.Error, match="--tickers / tickers=: no ticker given"):
            obook.connect().sql(q).fetchall()
