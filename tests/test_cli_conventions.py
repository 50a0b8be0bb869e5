"""The command line's conventions and start-up behaviour."""

from __future__ import annotations

import os

import pyarrow.compute as pc
import pytest
import subprocess
import sys

from typer.testing import CliRunner

import obook
from obook.cli import app
from obook.engine.replay import SMALL_FEED, default_workers
from obook.gen.itch import write_itch

runner = CliRunner()


def test_cli_version_prints_version():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"obook {obook.__version__}"


def test_cli_short_help_same_as_long_help():
    assert runner.invoke(app, ["-h"]).output == runner.invoke(app, ["--help"]).output
    sub = runner.invoke(app, ["bbo", "-h"])
    assert sub.exit_code == 0 and "--output" in sub.output


def test_cli_help_loads_no_pyarrow_numpy_numba_duckdb_polars():
    code = ("import sys\nfrom obook.cli import app\nsys.argv=['obook','--help']\n"
            "try:\n    app()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('pyarrow', 'numpy', 'numba', 'duckdb', 'polars', 'rich', 'obook.engine.replay', "
            "'obook._kernels.book') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_default_workers_small_feed_one_worker(tmp_path):
    small = tmp_path / "small.itch"
    write_itch(small, 1000, 5, seed=1)
    assert small.stat().st_size < SMALL_FEED
    assert default_workers(str(small)) == 1
    big = tmp_path / "big.itch"
    with open(big, "wb") as f:
        f.truncate(SMALL_FEED)
    assert default_workers(str(big)) == default_workers()


def _short_options(command, prefix=""):
    import typer.main

    click_cmd = typer.main.get_command(app) if command is None else command
    found = []
    for name, sub in getattr(click_cmd, "commands", {}).items():
        found += _short_options(sub, f"{prefix}{name} ")
    for p in getattr(click_cmd, "params", []):
        longs = [o for o in p.opts if o.startswith("--")]
        for o in p.opts:
            if len(o) == 2 and o not in ("-h",):
                found.append((o, longs[0] if longs else o, prefix.strip()))
    return found


def test_cli_short_options_one_meaning_everywhere():
    meanings: dict[str, set[str]] = {}
    for short, long, _ in _short_options(None):
        meanings.setdefault(short, set()).add(long)
    # gen's -k counts the instruments of the feed it writes: the same idea as naming them
    meanings["-k"] -= {"--instruments"}
    # -n is "how many" (messages to generate, rows to print)
    assert meanings.pop("-n") <= {"--messages", "--max-rows"}
    assert {s: m for s, m in meanings.items() if len(m) > 1} == {}


@pytest.mark.parametrize("command", [["convert", "F", "OUT"], ["lobster", "F", "OUT", "-k", "AAA"]])
def test_cli_levels_range_1_to_50_everywhere(command, tmp_path):
    feed = tmp_path / "f.itch"
    write_itch(feed, 1000, 5, seed=1)
    args = [str(feed) if a == "F" else str(tmp_path / "o") if a == "OUT" else a for a in command]
    for bad in ("0", "51"):
        r = runner.invoke(app, args + ["--levels", bad])
        assert r.exit_code == 2 and "--levels" in r.output, (bad, r.output)


@pytest.mark.parametrize("command", ["bbo", "convert", "simulate"])
def test_cli_date_help_says_every_formats_own_session_date(command):
    """--date's default is the feed's own day: a Nasdaq name, a date in a CSV or Shanghai
    log's name, a Shenzhen feed's first records (not a Nasdaq name alone)."""
    r = runner.invoke(app, [command, "--help"], terminal_width=400)
    line = next(ln for ln in r.output.splitlines() if "--date" in ln)
    assert all(w in line for w in ("NASDAQ_ITCH50", "YYYYMMDD", "Shanghai", "Shenzhen")), line


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("conv") / "tiny.itch"
    write_itch(path, 3000, 6, seed=2)
    return path


def test_cli_sql_format_csv_and_json_every_row(tiny):
    q = f"SELECT seq, ticker, bid_px FROM obook_bbo('{tiny}') ORDER BY seq"
    expected = obook.bbo(tiny, workers=1).read_all().select(["seq", "ticker", "bid_px"]).to_pylist()
    csv_out = runner.invoke(app, ["sql", q, "--format", "csv"])
    assert csv_out.exit_code == 0, csv_out.output
    lines = csv_out.stdout.splitlines()
    assert lines[0] == 'seq,ticker,bid_px' and len(lines) == len(expected) + 1
    import json

    js = runner.invoke(app, ["sql", q, "--format", "json"])
    assert [json.loads(line) for line in js.stdout.splitlines()] == expected


def test_cli_sql_timestamps_in_utc(tiny):
    r = runner.invoke(app, ["sql", f"SELECT timestamp FROM obook_bbo('{tiny}', date := '2019-12-30') LIMIT 1",
                            "--format", "csv"])
    assert r.exit_code == 0 and r.stdout.splitlines()[1].endswith("Z"), r.output


def test_cli_sql_bbo_grid_every_zero_clear_error(tiny):
    r = runner.invoke(app, ["sql", f"SELECT count(*) FROM obook_bbo_grid('{tiny}', 0)"])
    assert r.exit_code == 1 and "every must be a positive integer" in str(r.exception)


def test_bbo_grid_step_too_small_for_the_day_clear_error_everywhere(tiny):
    full = obook.bbo(tiny, workers=1).read_all()
    span = pc.max(full["time"]).as_py() - pc.min(full["time"]).as_py()
    assert span > 10**9                       # a step of 1 would ask for more than 500 M rows
    r = runner.invoke(app, ["sql", f"SELECT count(*) FROM obook_bbo_grid('{tiny}', 1)"])
    assert r.exit_code == 1 and "at most 500000000" in str(r.exception)
    with pytest.raises(obook.ObookError, match="at most 500,000,000"):
        obook.bbo_grid(tiny, 1, workers=1).read_all()


def test_cli_bbo_tickers_and_convert_format_options(tiny, tmp_path):
    full = obook.bbo(tiny, workers=1).read_all()
    ticker = full["ticker"][0].as_py()
    r = runner.invoke(app, ["bbo", str(tiny), "-k", ticker, "-w", "1"])
    assert r.exit_code == 0
    assert len(r.stdout.splitlines()) == sum(1 for t in full["ticker"].to_pylist() if t == ticker)
    r = runner.invoke(app, ["convert", str(tiny), str(tmp_path / "o"), "-f", "itch", "-k", ticker])
    assert r.exit_code == 0, r.output


def test_entry_cached_top_help_equals_the_cli_rendering():
    # `obook --help` prints obook/_help_text.py without importing typer: it must stay what
    # obook.cli renders (regenerate with `python -m obook._entry --write`)
    from obook._entry import render
    from obook._help_text import TEXT

    assert render() == TEXT


def test_top_help_every_registered_format_named():
    # the summary's formats come from the registry: a new plug-in is named without edits here
    from obook._help_text import TEXT
    from obook.feeds import formats

    summary = " ".join(TEXT.split("Options:")[0].split())
    for fmt in formats().values():
        assert fmt.title and fmt.title in summary, fmt.name


@pytest.mark.parametrize("columns, cached", [("100", True), ("60", False)])
def test_entry_help_wide_terminal_cached_without_typer_narrow_through_cli(columns, cached):
    from obook._help_text import TEXT

    code = ("import sys\nsys.argv = ['obook', '--help']\nfrom obook._entry import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('typer', 'click', 'obook.cli') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "COLUMNS": columns}).stdout
    text, loaded = out.rsplit("\n", 2)[0] + "\n", out.rsplit("\n", 2)[1]
    assert (text == TEXT) is cached and "Commands:" in text and "  bbo " in text
    assert (loaded == "[]") is cached


def _obook(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "obook", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env={**os.environ, "OBOOK_KERNELS": "python"})


def test_cli_csv_bad_line_one_feed_error_names_the_file_line_and_reason(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,1,B,100,100000\n34200001,AAA,2,S,100,x\n")
    r = _obook("bbo", bad)
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == f"error: {bad}: line 3: price is not an unsigned integer: 'x'"
    assert r.stdout.splitlines()[-1].startswith("34200000")       # the rows before it were written


def test_cli_csv_bad_line_in_a_query_error_names_the_file(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,1,B,100,x\n")
    r = _obook("sql", f"SELECT count(*) FROM obook_bbo('{bad}')")
    assert r.returncode == 1 and f"{bad}: line 2: price is not an unsigned integer: 'x'" in r.stderr


def test_cli_match_out_old_spelling_same_as_output(tmp_path):
    from obook.gen.orders import write_orders

    orders = tmp_path / "o.csv"
    write_orders(orders, 300, 2, seed=1)
    for flag, folder in (("--output", "new"), ("-o", "short"), ("--out", "old")):
        r = runner.invoke(app, ["match", str(orders), flag, str(tmp_path / folder), "-w", "1"])
        assert r.exit_code == 0, r.output
    import pyarrow.parquet as pq

    fills = {f: pq.read_table(tmp_path / f / "fills.parquet") for f in ("new", "short", "old")}
    assert fills["new"].num_rows > 0 and fills["new"].equals(fills["short"]) and fills["new"].equals(fills["old"])
    assert "--out " not in runner.invoke(app, ["match", "--help"]).output


def _float_options(command, path=()):
    """(command path, option) of every float option of the app, subcommands included."""
    for p in command.params:
        if getattr(p.type, "name", None) in ("float", "float range") and p.opts[0].startswith("--"):
            yield path, p.opts[0]
    for name, sub in getattr(command, "commands", {}).items():
        yield from _float_options(sub, (*path, name))


def _path_params(command, path=()):
    """(command path, arguments before, parameter) of every path parameter of the app."""
    from typer.core import TyperArgument

    args = [p for p in command.params if isinstance(p, TyperArgument)]
    for p in command.params:
        if getattr(p.type, "name", None) in ("path", "file", "directory"):
            before = args[:args.index(p)] if p in args else []
            yield path, before, p
    for name, sub in getattr(command, "commands", {}).items():
        yield from _path_params(sub, (*path, name))


def test_cli_path_given_empty_refused_with_one_line_error(tmp_path, monkeypatch):
    import typer.main
    from typer.core import TyperArgument

    monkeypatch.chdir(tmp_path)         # an empty path read as '.' would write here
    found = list(_path_params(typer.main.get_command(app)))
    assert len(found) >= 30 and any(p[0] == ("convert",) and p[2].name == "outdir" for p in found)
    for path, before, p in found:
        if isinstance(p, TyperArgument):
            argv = [*path, *(["x"] * len(before)), ""]
        else:
            argv = [*path, p.opts[0], ""]
        r = CliRunner().invoke(app, argv)
        assert r.exit_code == 2 and "'' names no file" in r.output and "Traceback" not in r.output, (argv, r.output)
    assert list(tmp_path.iterdir()) == []


def test_cli_float_options_nan_or_inf_refused_with_one_line_error():
    import typer.main

    found = list(_float_options(typer.main.get_command(app)))
    assert len(found) >= 20 and (("venue",), "--spin-us") in found and (("gen", "pcap"), "--drop") in found
    for path, opt in found:
        for bad in ("nan", "inf"):
            r = CliRunner().invoke(app, [*path, opt, bad])
            said = "is not a finite number" in r.output or (bad == "inf" and "is not in the range" in r.output)
            assert r.exit_code == 2 and said and "Traceback" not in r.output, (path, opt, bad, r.output)


def _choice_params(command, path=()):
    """(command path, parameter) of every choice option of ``command``, subcommands included."""
    for p in command.params:
        if getattr(p.type, "name", None) == "choice" and p.opts[0].startswith("--"):
            yield path, p
    for name, sub in getattr(command, "commands", {}).items():
        yield from _choice_params(sub, (*path, name))


def test_cli_choice_options_any_case_taken_unknown_refused_naming_the_choices():
    """Every choice option (as the group resolves its command) reads its words in any case, as
    Python's and SQL's options do; another word is an error listing the choices."""
    import typer.main

    group = typer.main.get_command(app)
    ctx = group.context_class(group, info_name="obook")
    found = [((name, *path), p) for name in group.commands
             for path, p in _choice_params(group.resolve_command(ctx, [name])[1])]
    assert len(found) >= 10 and any(path == ("bbo",) and p.opts[0] == "--on-error" for path, p in found)
    for path, p in found:
        word = str(list(p.type.choices)[-1])
        assert p.type.convert(word.upper(), p, ctx) == word, (path, p.opts)
        with pytest.raises(Exception, match="is not one of") as e:
            p.type.convert("nope-" + word, p, ctx)
        assert repr(word) in str(e.value), (path, p.opts)


def test_cli_bbo_choices_any_case_and_format_empty_detects_the_same_rows(tiny, tmp_path):
    want = runner.invoke(app, ["bbo", str(tiny), "-w", "1"])
    assert want.exit_code == 0 and want.stdout
    for extra in (["--on-error", "Skip"], ["--format", "ITCH"], ["--format", ""], ["-c", "FAST"]):
        r = runner.invoke(app, ["bbo", str(tiny), "-w", "1", *extra])
        assert r.exit_code == 0 and r.stdout == want.stdout, (extra, r.output)
    lower = runner.invoke(app, ["table", "bbo", str(tiny), "-w", "1", "--prices", "decimal"])
    r = runner.invoke(app, ["table", "bbo", str(tiny), "-w", "1", "--prices", "DECIMAL", "--on-error", "SKIP",
                            "-f", ""])
    assert lower.exit_code == 0 and r.exit_code == 0 and r.stdout == lower.stdout, r.output
    r = runner.invoke(app, ["convert", str(tiny), str(tmp_path / "o"), "-c", "Small", "-f", "Itch"])
    assert r.exit_code == 0 and (tmp_path / "o" / "bbo.parquet").exists(), r.output


@pytest.mark.parametrize("args, line", [
    (["backtest", "day.csv", "--strategy", "a\nb.py:X"], r"error: --strategy: no such file a\nb.py"),
    (["simulate", "no\rfile.csv", "orders.csv"], r"error: no\rfile.csv: cannot open feed: No such file or directory"),
])
def test_cli_error_naming_a_name_with_a_line_break_stays_one_line(tmp_path, monkeypatch, capsys, args, line):
    """An error quoting what the user gave (a strategy spec, a file name) with a line break in
    it is still one line: the break written as \\n (\\r)."""
    from tests.cli_support import cli_error

    (tmp_path / "day.csv").write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,a,B,100,990\n")
    (tmp_path / "orders.csv").write_text("time,instrument,order_id,action,side,type,tif,price,quantity\n")
    monkeypatch.chdir(tmp_path)
    assert cli_error(capsys, *args) == line + "\n"


def test_cli_error_quoting_a_huge_value_is_cut_to_a_readable_line(tmp_path, monkeypatch, capsys):
    """An error quoting a value of 100,000 characters (a pasted --date) is one line of at most
    a few thousand characters: its start (the option and the reason) and its end kept, the
    middle said to be left out."""
    from tests.cli_support import cli_error

    (tmp_path / "orders.csv").write_text("time,instrument,order_id,action,side,type,tif,price,quantity\n")
    monkeypatch.chdir(tmp_path)
    line = cli_error(capsys, "match", "orders.csv", "--date", "x" * 100_000)
    assert line.count("\n") == 1 and len(line) < 3_000, len(line)
    assert line.startswith("error: ") and "date" in line[:200], line[:200]
    assert "characters left out" in line, line[:200]


def test_cli_csv_bad_line_of_files_read_as_one_feed_error_names_the_file_and_the_joined_line(tmp_path):
    good, bad = tmp_path / "a.csv", tmp_path / "b.csv"
    good.write_text("Time,Ticker,Order,T,Shares,Price\n34200000,AAA,1,B,100,100000\n")
    bad.write_text("34200001,AAA,2,B,100,100000\n34200002,AAA,3,S,100,x\n")
    r = _obook("bbo", good, bad)
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == (f"error: {bad}: line 2: price is not an unsigned integer: 'x' "
                                         f"(line 4 of {good}+{bad})")
