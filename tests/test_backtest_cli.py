"""obook backtest on the command line: one day, several days (a date column), and a
strategy that raises (tables so far kept as .partial, exit 1)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from obook.cli import app
from obook.errors import ObookError

DAY = "Time,Ticker,Order,T,Shares,Price\n" + "".join(
    f"{t},AAA,o{t},{'B' if t % 2 else 'S'},100,{990 - t % 7 if t % 2 else 1000 + t % 5}\n" for t in range(1, 120))

STRATEGY = '''
from obook.backtest.orders import Order

class Join:
    """Joins the best bid once, 10 shares."""
    def __init__(self):
        self.sent = False
    def __call__(self, top):
        if self.sent or top.bid_px is None:
            return None
        self.sent = True
        return [Order("enter", top.ticker, "B", 10, top.bid_px, ref=1, tif="GTC")]

class Broken:
    def __init__(self):
        self.n = 0
    def __call__(self, top):
        self.n += 1
        if self.n == 3:
            raise RuntimeError("broken on purpose")
        return [Order("enter", top.ticker, "B", 10, top.bid_px or 990, ref=self.n, tif="GTC")]

class EveryBook:
    """Called on every book event, the word in capitals."""
    on = "BOOK"
    def on_book(self, ctx):
        return None

class Tick:
    """Counts its timer calls; stops a run that would call it again and again at one time."""
    def __init__(self):
        self.n = 0
    def on_timer(self, ctx):
        self.n += 1
        if self.n > 1000:
            raise RuntimeError("again and again")
'''


def _setup(tmp_path):
    (tmp_path / "s.py").write_text(STRATEGY)
    days = []
    for d in ("2024-01-02", "2024-01-03"):
        p = tmp_path / f"{d}.csv"
        p.write_text(DAY)
        days.append(str(p))
    return str(tmp_path / "s.py"), days


def test_backtest_cli_one_day_and_several_days_date_column(tmp_path):
    s, days = _setup(tmp_path)
    r = CliRunner().invoke(app, ["backtest", days[0], "--strategy", f"{s}:Join", "--format", "csv",
                                 "--order-latency", "2000000"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert summary["orders"] == 1 and summary["refused"] == 0
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["backtest", *days, "--strategy", f"{s}:Join", "--format", "csv", "-o", str(out)])
    assert r.exit_code == 0, r.output
    orders = pq.read_table(out / "backtest.orders.parquet")
    assert orders.column("date").to_pylist() == ["2024-01-02", "2024-01-03"]
    assert orders.column("sent").to_pylist()[0] == orders.column("sent").to_pylist()[1]
    assert set(json.loads((out / "summary.json").read_text())) == {"2024-01-02", "2024-01-03"}


def test_backtest_cli_raising_strategy_keeps_partial_tables(tmp_path):
    s, days = _setup(tmp_path)
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["backtest", days[0], "--strategy", f"{s}:Broken", "--format", "csv", "-o", str(out)])
    assert r.exit_code == 1
    assert "RuntimeError: broken on purpose" in r.output
    partial = pq.read_table(out / "backtest.orders.parquet.partial")
    assert partial.column("ref").to_pylist() == [1, 2]
    assert not (out / "backtest.orders.parquet").exists()


def test_backtest_duckdb_and_polars_match_python(tmp_path):
    import obook
    from obook.backtest import backtest
    from obook.live.cli_run import load_strategy
    from obook.polars import scan_backtest

    s, days = _setup(tmp_path)
    want = backtest(days[0], load_strategy(f"{s}:Join"), format="csv", order_latency=2_000_000)
    con = obook.connect()
    for macro, table in (("obook_backtest_orders", "orders"), ("obook_backtest_equity", "equity")):
        got = con.sql(f"SELECT * FROM {macro}('{days[0]}', '{s}:Join', order_latency := '2000000', "
                          f"format := 'csv')").arrow()
        got = got.read_all() if hasattr(got, "read_all") else got
        assert got.to_pylist() == want.table(table).to_pylist()
    lf = scan_backtest(days[0], f"{s}:Join", table="orders", format="csv", order_latency=2_000_000)
    assert lf.collect().to_arrow().to_pylist() == want.orders.to_pylist()


def test_backtest_cli_words_in_any_case_are_those_words(tmp_path):
    from obook.backtest import backtest
    from obook.live.cli_run import load_strategy

    s, days = _setup(tmp_path)
    every = backtest(days[0], load_strategy(f"{s}:EveryBook"), format="csv", on="book").summary["calls"]
    r = CliRunner().invoke(app, ["backtest", days[0], "--strategy", f"{s}:EveryBook", "--format", "csv",
                                 "--fee-per", "BPS", "--taker-fee", "10000"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["calls"] == every == len(DAY.splitlines()) - 1


@pytest.mark.parametrize("option, says", [
    (["--maker-fee", "abc"], "--maker-fee 'abc' is no number"),
    (["--taker-fee", "nan"], "--taker-fee 'nan' is not a finite number"),
    (["--taker-fee", "inf"], "not a finite number"),
    (["--maker-fee", "5e15"], "--maker-fee '5e15' is out of range: at most 1000000000000 price units a share"),
    (["--taker-fee", "-1e30"], "--taker-fee '-1e30' is out of range"),
    (["--taker-fee", "10001", "--fee-per", "bps"], "at most 10000 bps (the whole notional)"),
    (["--fee-per", "lots"], "--fee-per must be one of share, bps, not 'lots'"),
    (["--order-latency", "-5"], "latency '-5': give an integer"),
    (["--order-latency", "1.5"], "latency '1.5': give an integer"),
    (["--feed-latency", "nope.csv"], "latency 'nope.csv': give an integer"),
    (["--response-latency", "uniform:5"], "--response-latency 'uniform:5': give uniform:LO:HI"),
    (["--feed-latency", "normal:a:b"], "--feed-latency 'normal:a:b': distribution parameters must be"),
    (["--executor", "bogus"], "--executor 'bogus': local or dask://host:port"),
])
def test_backtest_cli_bad_option_values_are_obook_errors(tmp_path, option, says):
    assert says in _bad_option_error(tmp_path, option)


def _bad_option_error(tmp_path, option: list) -> str:
    """The ObookError's message of a one-day backtest given ``option``."""
    s, days = _setup(tmp_path)
    r = CliRunner().invoke(app, ["backtest", days[0], "--strategy", f"{s}:Join", "--format", "csv", *option])
    assert isinstance(r.exception, ObookError), r.output
    return str(r.exception)


@pytest.mark.parametrize("option, says", [
    (["--feed-latency", "-5"], "--feed-latency '-5'"),
    (["--order-latency", "-5"], "--order-latency '-5'"),
    (["--response-latency", "abc"], "--response-latency 'abc'"),
    (["--order-latency", "99999999999999999"], "--order-latency must be between 0 and"),
    (["--feed-latency", "uniform:5:1"], "--feed-latency uniform:5:1: give uniform:LO:HI with"),
    (["--seed", "-1"], "--seed must be"),
    (["--seed", str(1 << 63)], "--seed must be"),
    (["--timer-start", "-1"], "--timer-start must be"),
    (["--interval", "0"], "--interval must be > 0 seconds"),
    (["--capital", "-1"], "--capital must be a number > 0"),
    (["--tickers", ","], "--tickers: no ticker given"),
    (["--maker-fee", "abc"], "--maker-fee 'abc'"),
    (["--taker-fee", "1e30"], "--taker-fee '1e30'"),
    (["--fee-per", "lots"], "--fee-per must be one of"),
    (["--queue", "bogus"], "--queue 'bogus': one of"),
    (["--executor", "bogus"], "--executor 'bogus'"),
])
def test_backtest_cli_bad_option_value_error_names_the_option_as_typed(tmp_path, option, says):
    error = _bad_option_error(tmp_path, option)
    assert error.startswith(says) and "_" not in error.partition(":")[0], error


def test_backtest_cli_output_that_is_a_file_is_one_line_error(tmp_path, capsys):
    from cli_support import cli_error

    s, days = _setup(tmp_path)
    (tmp_path / "taken").write_text("")
    err = cli_error(capsys, "backtest", days[0], "--strategy", f"{s}:Join", "--format", "csv",
                    "-o", tmp_path / "taken")
    assert "taken: exists and is not a directory" in err


def test_backtest_cli_timer_shorter_than_the_feed_unit_is_one_line_error(tmp_path, capsys):
    from cli_support import cli_error

    s, days = _setup(tmp_path)
    err = cli_error(capsys, "backtest", days[0], "--strategy", f"{s}:Tick", "--format", "csv", "--timer", "1000")
    assert err.startswith("error: --timer 1000 ns: give 1000000 ns (the feed's time unit)"), err


@pytest.mark.parametrize("option, says", [
    (["--interval", "1e-9"], "--interval 1e-09 s: give 0.001 s (the feed's time unit) to 604800 s (a week)"),
    (["--interval", "0.0005"], "--interval 0.0005 s: give 0.001 s (the feed's time unit)"),
    (["--interval", "1e12"], "--interval 1000000000000.0 s: give 0.001 s (the feed's time unit) to 604800 s"),
    (["--timer", "1000000"], "--timer 1000000: the strategy has no on_timer to call"),
    (["TICK", "--timer", "1000"], "--timer 1000 ns: give 1000000 ns (the feed's time unit) to 604800000000000 ns"),
    (["TICK", "--timer", "999999999999999999"], "--timer 999999999999999999 ns: give 1000000 ns"),
    (["TICK", "--timer", "1500000"], "--timer 1500000 ns: not a whole number of the feed's time unit (1000000 ns)"),
])
@pytest.mark.parametrize("days", [1, 2])
def test_backtest_cli_interval_or_timer_checked_with_the_feed_unit_error_names_the_option(tmp_path, capsys, option,
                                                                                         says, days):
    from cli_support import cli_error

    s, feeds = _setup(tmp_path)
    strategy = f"{s}:Tick" if option[0] == "TICK" else f"{s}:Join"
    err = cli_error(capsys, "backtest", *feeds[:days], "--strategy", strategy, "--format", "csv",
                    *[o for o in option if o != "TICK"])
    day = "" if days == 1 else f"day 2024-01-02 ({feeds[0]}): "
    assert err.startswith(f"error: {day}{says}"), err


@pytest.mark.parametrize("kwargs, says", [
    (dict(interval=1e-9, timer=1_000_000), "interval 1e-09 s: give 0.001 s (the feed's time unit)"),
    (dict(timer=1000), "timer 1000 ns: give 1000000 ns (the feed's time unit)"),
    (dict(timer=1_500_000), "timer 1500000 ns: not a whole number of the feed's time unit"),
])
def test_backtest_interval_or_timer_checked_with_the_feed_unit_error_names_the_argument(tmp_path, kwargs, says):
    from obook.backtest import backtest
    from obook.live.cli_run import load_strategy

    s, days = _setup(tmp_path)
    with pytest.raises(ObookError) as e:
        backtest(days[0], load_strategy(f"{s}:Tick"), format="csv", **kwargs)
    assert str(e.value).startswith(says), e.value


def test_backtest_cli_timer_start_for_a_strategy_without_timer_error_names_the_option(tmp_path, capsys):
    from cli_support import cli_error

    s, days = _setup(tmp_path)
    err = cli_error(capsys, "backtest", days[0], "--strategy", f"{s}:Join", "--format", "csv", "--timer-start", "5")
    assert err.startswith("error: --timer-start 5: the strategy has no timer to start"), err


def test_backtest_cli_timer_strategy_without_a_period_error_names_the_option(tmp_path, capsys):
    from cli_support import cli_error

    s, days = _setup(tmp_path)
    err = cli_error(capsys, "backtest", days[0], "--strategy", f"{s}:Tick", "--format", "csv")
    assert "the strategy has on_timer: give the timer's period" in err and "--timer" in err


@pytest.mark.parametrize("option", [["--order-latency", "99999999999999999999"], ["--timer", "99999999999999999999"]])
def test_backtest_cli_latency_or_timer_beyond_64_bits_is_one_line_error(tmp_path, capsys, option):
    from cli_support import cli_error

    s, days = _setup(tmp_path)
    err = cli_error(capsys, "backtest", days[0], "--strategy", f"{s}:Tick", "--format", "csv", "--timer", "1000000",
                    *option)
    assert "604800000000000 ns (a week)" in err


def test_backtest_cli_bad_feed_record_keeps_tables_before_it_as_partial(tmp_path, capsys):
    from cli_support import cli_error

    s, days = _setup(tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text(DAY + "200,AAA,zz,Q,1,1\n")
    out = tmp_path / "out"
    err = cli_error(capsys, "backtest", bad, "--strategy", f"{s}:Join", "--format", "csv", "-o", out)
    assert "bad.csv: line 121: unknown message type 'Q'" in err and "backtest.TABLE.parquet.partial" in err
    assert pq.read_table(out / "backtest.orders.parquet.partial").column("ref").to_pylist() == [1]
    assert not (out / "backtest.orders.parquet").exists() and not (out / "summary.json").exists()


@pytest.mark.parametrize("pipeline", [False, True])
def test_backtest_progress_reports_bytes_read_up_to_the_file_size(tmp_path, pipeline):
    import os

    import obook
    from obook.live.cli_run import load_strategy

    strategy, days = _setup(tmp_path)
    seen = []
    r = obook.backtest(days[0], load_strategy(f"{strategy}:Join"), format="csv", pipeline=pipeline,
                       progress=seen.append)
    assert r.orders.num_rows == 1
    assert seen and seen == sorted(seen) and seen[-1] == os.path.getsize(days[0])


def test_backtest_progress_not_a_function_is_an_error(tmp_path):
    import obook
    from obook.live.cli_run import load_strategy

    strategy, days = _setup(tmp_path)
    with pytest.raises(ObookError, match="progress must be a function"):
        obook.backtest(days[0], load_strategy(f"{strategy}:Join"), format="csv", progress=5)


def test_backtest_cli_output_folder_says_what_it_wrote(tmp_path):
    s, days = _setup(tmp_path)
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["backtest", days[0], "--strategy", f"{s}:Join", "--format", "csv", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert r.stdout == ""
    rows = {t: pq.read_table(out / f"backtest.{t}.parquet").num_rows
            for t in ("orders", "events", "fills", "positions", "equity")}
    assert rows["orders"] == 1
    said = ", ".join(f"{t}: {n:,} row{'' if n == 1 else 's'}" for t, n in rows.items())
    assert r.stderr.strip().splitlines()[-1] == f"{said} -> {out}"


def test_backtest_cli_help_shows_an_example_and_the_fees_unit():
    out = " ".join(CliRunner().invoke(app, ["backtest", "--help"], terminal_width=200).output.split())
    assert "obook backtest day.itch --strategy join_bid.py:JoinBid --order-latency 50000 -o bt" in out
    assert "Fee a share in the feed's price units" in out


def test_backtest_cli_help_timer_and_interval_state_the_ranges_their_errors_give():
    out = " ".join(CliRunner().invoke(app, ["backtest", "--help"], terminal_width=200).output.split())
    assert "a whole number of the feed's time unit, up to a week: 604800000000000" in out
    assert "from the feed's time unit to a week (604800)" in out


def test_backtest_cli_shenzhen_vendor_files_of_one_day_are_one_feed(tmp_path):
    """A Shenzhen vendor day is an orders and a ticks file per security, read as one feed:
    the command line runs them as one day (as obook.backtest runs their list), not a day each."""
    import obook
    from obook.gen.szse import generate, write_vendor
    from obook.live.cli_run import load_strategy
    from obook.plotting_backtest import backtest_series

    (tmp_path / "s.py").write_text(STRATEGY)
    files = sorted(str(p) for p in write_vendor(tmp_path / "day", generate(4000, 2, 0, "2024-01-05")))
    assert len(files) > 2
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["backtest", *files, "--strategy", f"{tmp_path / 's.py'}:Join", "-o", str(out)])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary == json.loads(json.dumps(obook.backtest(files, load_strategy(f"{tmp_path / 's.py'}:Join"),
                                                           format="szse-csv").summary, default=str))
    assert summary["orders"] == 1
    assert backtest_series(str(out))["price"]["bid"][0].size > 0      # the picture replays the day's files


@pytest.mark.parametrize(("strategy", "sql", "kwargs"), [
    ("Join", "maker_fee := '0.5', taker_fee := 2, fee_per := 'SHARE', interval := 0.001, capital := 50000.0, "
             "day_end := false, on_error := 'skip', date := '2024-01-02', queue := 'fifo'",
     dict(fees=("0.5", 2, "SHARE"), interval=0.001, capital=50000.0, day_end=False, on_error="skip",
          date="2024-01-02", queue="fifo")),
    ("Tick", "timer := 10000000, timer_start := 5, seed := 3", dict(timer=10_000_000, timer_start=5, seed=3)),
])
def test_backtest_duckdb_options_give_the_python_rows(tmp_path, strategy, sql, kwargs):
    import obook
    from obook.backtest import Fees, backtest
    from obook.live.cli_run import load_strategy

    s, days = _setup(tmp_path)
    if "fees" in kwargs:
        kwargs["fees"] = Fees(*kwargs["fees"])
    want = backtest(days[0], load_strategy(f"{s}:{strategy}"), format="csv", **kwargs)
    con = obook.connect()
    for macro, table in (("obook_backtest", "fills"), ("obook_backtest_orders", "orders"),
                         ("obook_backtest_equity", "equity"), ("obook_backtest_positions", "positions")):
        got = con.sql(f"SELECT * FROM {macro}('{days[0]}', '{s}:{strategy}', format := 'csv', {sql})").arrow()
        got = got.read_all() if hasattr(got, "read_all") else got
        assert got.to_pylist() == want.table(table).to_pylist(), macro
    if "fees" in kwargs:        # the options did something
        plain = backtest(days[0], load_strategy(f"{s}:{strategy}"), format="csv")
        assert want.equity.num_rows != plain.equity.num_rows


@pytest.mark.parametrize(("sql", "says"), [
    ("maker_fee := 'x'", "maker"),
    ("fee_per := 'lot'", "fees per must be one of"),
    ("capital := -1", "capital must be a number > 0"),
    ("timer_start := -1", "timer_start"),
    ("on_error := 'x'", "on_error must be one of raise, skip, not 'x'"),
    ("day_end := 3", "day_end must be true or false, not 3"),
    ("date := '2024-02-30'", "2024-02-30"),
    ("order_latency := 'uniform:5'", "order_latency 'uniform:5'"),
])
def test_backtest_duckdb_wrong_option_is_an_error_naming_it(tmp_path, sql, says):
    import duckdb

    import obook

    s, days = _setup(tmp_path)
    with pytest.raises(duckdb.Error, match=says):
        obook.connect().sql(f"SELECT * FROM obook_backtest('{days[0]}', '{s}:Join', format := 'csv', {sql})").fetchall()


def test_backtest_cli_capital_day_end_on_error_date_reach_the_run(tmp_path):
    from obook.backtest import backtest
    from obook.live.cli_run import load_strategy

    s, days = _setup(tmp_path)
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["backtest", days[0], "--strategy", f"{s}:Join", "--format", "csv", "--capital", "5000",
                                 "--no-day-end", "--on-error", "skip", "--date", "2024-01-02", "-o", str(out)])
    assert r.exit_code == 0, r.output
    want = backtest(days[0], load_strategy(f"{s}:Join"), format="csv", capital=5000.0, day_end=False, on_error="skip",
                    date="2024-01-02")
    for t in ("orders", "events", "equity"):
        assert pq.read_table(out / f"backtest.{t}.parquet").to_pylist() == want.table(t).to_pylist(), t
    assert json.loads((out / "summary.json").read_text())["capital"] == 5000.0


def test_backtest_cli_timer_start_reaches_the_strategy(tmp_path):
    s, days = _setup(tmp_path)
    (tmp_path / "late.py").write_text(
        "class Late:\n    def on_timer(self, ctx):\n        assert ctx.time >= 100, ctx.time\n")
    r = CliRunner().invoke(app, ["backtest", days[0], "--strategy", f"{tmp_path / 'late.py'}:Late", "--format", "csv",
                                 "--timer", "10000000", "--timer-start", "100"])
    assert r.exit_code == 0, r.output


def test_backtest_cli_date_with_several_days_is_an_error(tmp_path, capsys):
    from cli_support import cli_error

    s, days = _setup(tmp_path)
    assert "--date is the session date of one feed" in cli_error(capsys, "backtest", *days, "--strategy", f"{s}:Join",
                                                                 "--date", "2024-01-02")


def test_backtest_cli_shanghai_summary_and_parquet_files_state_their_units(tmp_path):
    from pathlib import Path

    from obook.gen.sse import write_sse

    day = tmp_path / "2024-01-05.log"
    write_sse(day, 20_000)
    strategy = Path(__file__).parents[1] / "examples" / "strategy_quote.py"
    r = CliRunner().invoke(app, ["backtest", str(day), "--strategy", f"{strategy}:JoinBid", "-k", "600000",
                                 "-o", str(tmp_path / "bt")])
    assert r.exit_code == 0, r.output
    summary = json.loads((tmp_path / "bt" / "summary.json").read_text())
    fills = pq.read_table(tmp_path / "bt" / "backtest.fills.parquet")
    assert fills.num_rows and "filled_shares" not in summary       # 1/1000 share quantities
    assert summary["filled_quantity"] == sum(fills.column("quantity").to_pylist())
    assert (summary["price_scale"], summary["quantity_scale"]) == (1000, 1000)
    for name in ("orders", "events", "fills", "positions", "equity"):
        meta = pq.read_schema(tmp_path / "bt" / f"backtest.{name}.parquet").metadata
        assert meta[b"obook.table"] == f"backtest_{name}".encode()
        assert (meta[b"obook.format"], meta[b"obook.price_scale"], meta[b"obook.quantity_scale"],
                meta[b"obook.time_unit"], meta[b"obook.time_origin"], meta[b"obook.time_zone"]) == (
            b"sse", b"1000", b"1000", b"ns", b"midnight", b"Asia/Shanghai"), name
    meta = fills.schema.metadata
    assert (meta[b"obook.price_columns"], meta[b"obook.quantity_columns"], meta[b"obook.money_columns"]) == (
        b"price", b"quantity", b"fee")


def test_backtest_cli_quoted_glob_a_day_each_file_as_listed(tmp_path):
    s, days = _setup(tmp_path)
    runs = {}
    for name, feeds in (("listed", days), ("glob", [f"{tmp_path}/2024-*.csv"])):
        r = CliRunner().invoke(app, ["backtest", *feeds, "--strategy", f"{s}:Join", "--format", "csv",
                                     "-o", str(tmp_path / name)])
        assert r.exit_code == 0, r.output
        runs[name] = json.loads((tmp_path / name / "summary.json").read_text())
    assert set(runs["glob"]) == {"2024-01-02", "2024-01-03"} and runs["glob"] == runs["listed"]


@pytest.mark.parametrize("name", ["summary.json", "run.json", "backtest.orders.parquet", "backtest.fills.parquet.partial"])
def test_backtest_cli_feed_named_like_an_output_in_the_folder_one_error_line(tmp_path, capsys, name):
    from cli_support import cli_error

    s, days = _setup(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(days[0])
    err = cli_error(capsys, "backtest", out / name, "--strategy", f"{s}:Join", "--format", "csv", "-o", out)
    assert err == f"error: {out / name}: is an input of this command; write the tables elsewhere\n"
    assert (tmp_path / "2024-01-02.csv").read_text() == DAY
    assert sorted(p.name for p in out.iterdir()) == [name]


@pytest.mark.parametrize("name", ["run.json", "summary.json", "backtest.fills.parquet"])
def test_backtest_cli_output_name_taken_by_a_folder_one_error_line_no_file_written(tmp_path, capsys, name):
    from cli_support import cli_error

    s, days = _setup(tmp_path)
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    err = cli_error(capsys, "backtest", days[0], "--strategy", f"{s}:Join", "--format", "csv", "-o", out)
    assert err.startswith(f"error: {out / name}: is a directory"), err
    assert sorted(p.name for p in out.iterdir()) == [name]


def test_backtest_cli_output_folder_another_run_holds_one_error_line_nothing_written(tmp_path, capsys):
    from cli_support import cli_error_while_held

    s, days = _setup(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    err = cli_error_while_held(capsys, out, "backtest", days[0], "--strategy", f"{s}:Join", "--format", "csv",
                               "-o", out)
    assert err == (f"error: {out}: another run is writing its tables into this folder now; wait for it to end, "
                   "or give another folder\n")
    assert list(out.iterdir()) == []


COMPILED = '''
import numba
import obook


@numba.njit
def _idle(call, lo, refkey, state, out):
    return 0


Idle = obook.backtest.compiled(_idle)


def python_idle(top):
    return []
'''


@pytest.mark.parametrize("name", ["Idle", "python_idle"])
def test_backtest_cli_compiled_or_python_strategy_file_runs_and_warns_of_a_ticker_not_in_the_feed(tmp_path, caplog,
                                                                                                   name):
    (tmp_path / "c.py").write_text(COMPILED)
    feed = tmp_path / "day.csv"
    feed.write_text(DAY)
    with caplog.at_level("WARNING", logger="obook"):
        r = CliRunner().invoke(app, ["backtest", str(feed), "--strategy", f"{tmp_path / 'c.py'}:{name}",
                                     "--format", "csv", "--tickers", "AAA,NOPE"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["orders"] == 0
    assert "not in the feed: NOPE" in caplog.text
