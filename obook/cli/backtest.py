"""``obook backtest``: a strategy in a closed loop with replayed days."""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from pathlib import Path
from typing import List, Optional

import typer

from .bbo import OnError


def backtest(
    feeds: List[Path] = typer.Argument(..., help="Feed files (any order-level format, or an L2 input: mbp-1/mbp-10 "
                                                 "Parquet or DBN); several, a pipeline's TOML (its source days) or "
                                                 "a pipeline's dataset folder (the days it converted): one day each, "
                                                 "one process (or Dask task) per day, tables with a date column. "
                                                 "Files read as one feed (a Shenzhen vendor day's orders and ticks "
                                                 "files) are one day, by date."),
    strategy: str = typer.Option(..., "--strategy",
                                 help="FILE.py:NAME or module:NAME: a live strategy callable(top) -> orders, an "
                                      "object with on_book / on_order / on_timer, or obook.backtest.compiled(...) "
                                      "(a class is instantiated)."),
    tickers: Optional[str] = typer.Option(None, "--tickers", "-k", help="Comma-separated instruments it trades and sees."),
    feed_latency: Optional[str] = typer.Option(None, "--feed-latency",
                                               help="ns venue -> strategy: an integer, uniform:LO:HI, "
                                                    "exponential:MEAN, normal:MEAN:SD, lognormal:MU:SIGMA, or a "
                                                    "CSV/Parquet table (time, latency) interpolated in time."),
    order_latency: Optional[str] = typer.Option(None, "--order-latency", help="ns strategy -> venue (same forms)."),
    response_latency: Optional[str] = typer.Option(None, "--response-latency",
                                                   help="ns venue -> strategy for acks and fills (same forms)."),
    seed: int = typer.Option(0, "--seed", help="Seed of latency distributions."),
    timer: Optional[int] = typer.Option(None, "--timer", min=1,
                                        help="ns of feed time between calls of the strategy's on_timer "
                                             "(1000000000: once a feed second; a whole number of the "
                                             "feed's time unit, up to a week: 604800000000000)."),
    maker_fee: str = typer.Option("0", "--maker-fee", help="Fee a share in the feed's price units, decimals allowed "
                                                            "(or bps of the notional with --fee-per bps); < 0: "
                                                            "a rebate."),
    taker_fee: str = typer.Option("0", "--taker-fee", help="Fee a share in the feed's price units (or bps with "
                                                            "--fee-per bps)."),
    fee_per: str = typer.Option("share", "--fee-per", help="share or bps, in any case."),
    interval: float = typer.Option(60.0, "--interval",
                                   help="Seconds between equity samples and Sharpe returns: from the feed's "
                                        "time unit to a week (604800)."),
    out: Optional[Path] = typer.Option(None, "--output", "-o",
                                       help="Write the tables (backtest.orders.parquet, and events, fills, positions, "
                                            "equity), summary.json and run.json to this folder; default: the "
                                            "summary on stdout."),
    format: Optional[str] = typer.Option(None, "--format", "-f", help="Feed format, in any case (default, or '': detected)."),
    processes: int = typer.Option(1, "--processes", "-p", min=1, help="Days run at once (several feeds)."),
    executor: str = typer.Option("local", "--executor", metavar="local|dask://HOST:PORT",
                                 help="Several days: local processes, or tasks on an existing Dask cluster."),
    queue: Optional[str] = typer.Option(None, "--queue",
                                        help="Queue model: fifo (order-level feeds) or, for L2 inputs, power:N "
                                             "(default power:2), power2:N, power3:N, log, log2, risk-averse."),
    timer_start: Optional[int] = typer.Option(None, "--timer-start", help="The first on_timer call's time (feed time "
                                                                          "units; default: one --timer after the "
                                                                          "first book event of its instruments; "
                                                                          "only with a timer)."),
    capital: Optional[float] = typer.Option(None, "--capital",
                                            help="The return's denominator, price units x quantity units (default: half the "
                                                 "traded notional)."),
    on_error: OnError = typer.Option(OnError.raise_, "--on-error",
                                     help="raise: a feed record that cannot be read stops the run; skip: such records "
                                          "are skipped and counted."),
    no_day_end: bool = typer.Option(False, "--no-day-end", help="Do not expire DAY orders after the feed's end."),
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help="Session date of one feed (default: the format's, e.g. a Nasdaq file "
                                            "name); several days each have their own."),
) -> None:
    """Run a strategy against replayed days: it sees the book after the feed latency, its
    orders pass the live risk gate and reach the book after the order latency (queues from
    the feed's order ids, as obook simulate), and hears of acks and fills after the
    response latency. A strategy that raises stops the run: the tables so far are written
    as backtest.TABLE.parquet.partial and the traceback is printed. A feed record that
    cannot be read stops it too, the tables before it kept alike.

    \b
    Example (docs/backtesting.md has the strategy):
      obook backtest day.itch --strategy join_bid.py:JoinBid --order-latency 50000 -o bt
    """
    from ..backtest import TABLES, Fees, StrategyError, backtest_named
    from ..backtest.arguments import load_backtest_strategy
    from ..backtest.days import backtest_days, check_executor, day_name, one_feed_a_day
    from ..errors import ObookError
    from ..backtest.l2_input import is_l2
    from ..output import output_folder
    from .progress import file_progress
    from .stdout import written

    latencies = _checked(tickers, (feed_latency, order_latency, response_latency), seed, timer_start, interval,
                         capital, (maker_fee, taker_fee, fee_per), queue)
    kwargs = dict(tickers=tickers, **latencies, seed=seed, timer=timer, interval=interval,
                  fees=Fees(maker_fee, taker_fee, fee_per), format=format, queue=queue, timer_start=timer_start,
                  capital=capital, on_error=on_error.value, day_end=not no_day_end)
    check_executor(executor, "--executor")        # also with one day, which runs here
    feeds, dates = _days(feeds, format)
    if dates is None:
        feeds = one_feed_a_day(feeds, format)      # a Shenzhen vendor day's files: one feed
    if date is not None:
        if dates is not None or len(feeds) > 1:
            raise ObookError("--date is the session date of one feed; several days each have their own")
        kwargs["date"] = date
    if len(feeds) > 1 and dates is None:
        dates = [day_name(f, format) for f in feeds]
    run_doc = (format, strategy, tickers)
    # the output folder is made (or refused) before the run, and goes again when the run
    # fails and leaves nothing in it
    if out is not None:
        _check_outputs(out, feeds)
    with output_folder(out) if out is not None else nullcontext():
        try:
            if dates is None:
                with file_progress(feeds[0], enabled=not is_l2(feeds[0])) as progress:
                    r = backtest_named(feeds[0], load_backtest_strategy(strategy), FEED_OPTIONS, progress=progress,
                                       **kwargs)
            else:
                r = backtest_days(feeds, strategy, processes=processes, dates=dates, executor=executor,
                                  option_names=FEED_OPTIONS, **kwargs)
        except ObookError as e:    # a strategy that raised or a bad feed record: the tables so far, as .partial
            if isinstance(e, StrategyError):
                typer.echo(e.traceback, err=True, nl=False)
            if out is not None and getattr(e, "partial", None) is not None:
                days = list(e.partial.summary) if dates is not None else ["day"]      # the failed day last
                _keep_partial(out, e, (feeds[:len(days)], days, *run_doc))
            raise
        summary = json.dumps(r.summary, default=str, indent=1)
        if out is None:
            typer.echo(summary)
            return
        _write(out, r, "", summary, (feeds, list(r.summary) if dates is not None else ["day"], *run_doc))
    typer.echo(written(r, TABLES, out), err=True)


#: the latencies' and the fees' options, as ``obook.backtest``'s errors name them on the command line
LATENCY_OPTIONS = ("--feed-latency", "--order-latency", "--response-latency")
FEE_OPTIONS = ("--maker-fee", "--taker-fee", "--fee-per")
#: the options the backtest checks with the feed's time unit, by their names on the command line
FEED_OPTIONS = {"interval": "--interval", "timer": "--timer", "timer_start": "--timer-start"}


def _checked(tickers, latencies: tuple, seed: int, timer_start, interval: float, capital, fees: tuple,
             queue) -> dict:
    """The options the backtest checks again by their Python names (``order_latency``),
    checked first by the names typed (``--order-latency``); the latencies as its keyword
    arguments."""
    from ..backtest.arguments import check_capital, check_queue, check_seconds, check_timer_start
    from ..backtest.latency import pack, parse_texts
    from ..backtest.tables import fee_rates
    from ..checks import check_seed, ticker_names

    ticker_names(tickers, "--tickers")
    got = parse_texts(*latencies, names=LATENCY_OPTIONS)
    pack(tuple(got.values()), 1, check_seed(seed, "--seed"), names=LATENCY_OPTIONS)
    check_timer_start(timer_start, "--timer-start")
    check_seconds(interval, "--interval")
    check_capital(capital, "--capital")
    fee_rates(*fees, names=FEE_OPTIONS)
    check_queue(queue, "--queue")
    return got


def _keep_partial(out: Path, e, run: tuple) -> None:
    """The tables of a run that stopped with ``e``, as backtest.TABLE.parquet.partial (named
    in its message); when they cannot be written, ``e`` is still what is reported."""
    import logging

    from ..errors import OutputError

    try:
        _write(out, e.partial, ".partial", None, run)
    except OutputError as w:
        logging.getLogger("obook").warning("the tables so far were not kept: %s", w)
        return
    e.kept_in = str(out / "backtest.TABLE.parquet.partial")


def _write(out: Path, result, suffix: str, summary: Optional[str], run: tuple) -> None:
    """The tables (``suffix`` ".partial": those of a run that stopped), summary.json (none for
    a stopped run) and run.json in ``out``, all or none (the JSON files go to temporary names
    first and are renamed once the tables are in place); the files of another run's other
    kind there go (a folder never holds one run's tables beside another's .partial ones)."""
    from ..output import holding_output_dir
    from ..plotting_backtest import RUN_FILE

    texts = {RUN_FILE: _run_text(*run), **({"summary.json": summary + "\n"} if summary is not None else {})}
    with holding_output_dir(out):       # (another run's tables: not beside these)
        _write_held(out, result, suffix, summary, texts)


def _write_held(out: Path, result, suffix: str, summary: Optional[str], texts: dict) -> None:
    """:func:`_write`'s files, ``texts`` the JSON files' (by name), once ``out`` is held."""
    from ..backtest import TABLES
    from ..errors import OutputError
    from ..interrupts import deferred
    from ..output import write_failure
    from ..tempfiles import remove_quietly, temp_path

    staged, path = [], out
    try:
        for name, text in texts.items():
            path = out / name
            staged.append((temp_path(path), path))
            staged[-1][0].write_text(text)
        result.write(str(out / "backtest"), suffix=suffix)
        stale = [out / f"backtest.{t}.parquet{'' if suffix else '.partial'}" for t in TABLES]
        with deferred():    # a second Ctrl-C: once every one is gone, not a part of them
            for stale_path in stale + ([out / "summary.json"] if summary is None else []):
                remove_quietly(stale_path)
            for tmp, path in staged:
                os.replace(tmp, path)
    except OSError as e:
        raise OutputError(f"{path}: write failed: {write_failure(e)}") from None
    finally:
        with deferred():    # a second Ctrl-C: once every temp file is gone
            for tmp, _ in staged:
                remove_quietly(tmp)         # (gone once renamed)


def _check_outputs(out: Path, feeds: list) -> None:
    """OutputError before the run when a file it writes in ``out`` is a folder, or one of
    its feeds (the file would replace it)."""
    from ..backtest import TABLES
    from ..errors import OutputError
    from ..output import check_not_an_input
    from ..plotting_backtest import RUN_FILE

    inputs = [os.fspath(p) for f in feeds for p in (f if isinstance(f, (list, tuple)) else [f])]
    names = [f"backtest.{t}.parquet{s}" for t in TABLES for s in ("", ".partial")] + ["summary.json", RUN_FILE]
    for name in names:
        path = out / name
        if path.is_dir():
            raise OutputError(f"{path}: is a directory; the backtest cannot write its {name} there")
        check_not_an_input(path, inputs, "tables")


def _days(paths: List[Path], format: Optional[str] = None) -> tuple[list, Optional[list]]:
    """(feed files, their dates or None): a pipeline's TOML gives its source days, a
    pipeline's dataset folder the source files of the days it has done, by date (a file's
    date by the naming rule of ``format``, else the pipeline's, else the one told from it)."""
    from ..errors import ObookError

    from ..backtest.days import day_name
    from .bbo import feed_files

    paths = [Path(p) for p in feed_files(paths)]    # a quoted glob pattern: its files, a day each
    if not any(p.suffix == ".toml" or p.is_dir() for p in paths):
        return [str(p) for p in paths], None
    days = []
    for p in paths:
        if p.suffix == ".toml":
            from ..pipelines import load

            pipe = load(p)
            days += [(day_name(str(f), format or pipe.format), str(f))
                     for f in sorted(pipe.source_dir.glob(pipe.glob)) if f.is_file()]
        elif p.is_dir():
            from ..pipelines import manifest

            done = manifest.read(p)["days"]
            if not done:
                raise ObookError(f"{p}: not a pipeline dataset with days done (no {manifest.MANIFEST} days)")
            days += [(date, rec.get("path", rec["source"])) for date, rec in sorted(done.items())]
        else:
            days.append((day_name(str(p), format), str(p)))
    if not days:
        raise ObookError(f"backtest: no day files in {', '.join(map(str, paths))}")
    return [f for _, f in days], [d for d, _ in days]


def _run_text(feeds, days: list, format, strategy: str, tickers) -> str:
    """run.json's text: the feeds by day and their format (obook plot backtest draws the
    price from them; an L2 input is not replayed: its picture draws the equity's marks)."""
    from ..backtest.l2_input import is_l2
    from ..feeds import resolve_format
    from ..plotting_backtest import run_text

    if is_l2(feeds[0]):
        return run_text({}, "databento", strategy, tickers)
    formats = {day: resolve_format(format, f).name for day, f in zip(days, feeds)}    # a day each, told apart
    return run_text(dict(zip(days, feeds)), formats[days[0]], strategy, tickers, formats)
