"""``obook simulate``: your own orders inside a replayed feed (queue position, fills, latency)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from .bbo import DATE_DEFAULT, OnError


class OutType(str, Enum):
    parquet = "parquet"
    csv = "csv"
    arrow = "arrow"


def simulate(
    ctx: typer.Context,
    feed: Path = typer.Argument(..., help="The feed (any format obook bbo reads: every one "
                                          "obook --help names); a feed in several files (a Shenzhen vendor "
                                          "CSV day, a day cut in pieces) as a quoted glob pattern, "
                                          "'day/*.csv': its files, sorted, are one feed."),
    orders: Path = typer.Argument(..., help="Your orders: CSV, Parquet or Arrow IPC (columns: time, instrument, "
                                            "order_id, action, side, type, tif, price, quantity; time in the "
                                            "feed's unit, instrument = the feed's ticker)."),
    out: Optional[Path] = typer.Option(None, "--output", "-o",
                                       help="Write the tables (--tables; default fills, events, summary, "
                                            "bbo_with_own and bbo) to this folder (the tables an earlier run left "
                                            "there that this one does not write are removed); default: one table "
                                            "(fills) as CSV on stdout."),
    tables: Optional[str] = typer.Option(
        None, "--tables", "-t",
        help="Comma-separated tables: fills, events, summary, bbo_with_own, depth_with_own (the feed's top "
             "--levels levels with your orders in them) and the feed's own bbo, trades, orders, depth. "
             "Without --output: exactly one."),
    levels: int = typer.Option(10, "--levels", min=1, max=50, help="Levels a side of depth and depth_with_own."),
    out_type: OutType = typer.Option(OutType.parquet, "--type", help="File type of the tables in --output."),
    latency: Optional[str] = typer.Option(
        None, "--latency",
        help="ns from decision to book, 0 to a week (604800000000000): an integer, a column of ORDERS, or a "
             "distribution uniform:LO:HI, exponential:MEAN, normal:MEAN:SD, lognormal:MU:SIGMA (with --seed)."),
    seed: int = typer.Option(0, "--seed", help="Seed of a latency distribution."),
    horizon: float = typer.Option(1.0, "--horizon", min=0, max=604_800, help="Seconds after arrival of the summary's later mid."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", min=1, max=64,
                                          help="Worker processes (default: one per core, at most 8)."),
    format: Optional[str] = typer.Option(None, "--format", "-f", help="Feed format, in any case (default, or '': detected)."),
    no_day_end: bool = typer.Option(False, "--no-day-end", help="Do not expire DAY orders after the feed's end."),
    on_error: OnError = typer.Option(OnError.raise_, "--on-error",
                                     help="raise: stop at the first feed record that cannot be read; skip: apply the "
                                          "tolerant rules (a feed cut short is still an error)."),
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help=f"Session date YYYY-MM-DD (default: {DATE_DEFAULT}): "
                                            "every table with a time column (all but summary) gets a timestamp column (UTC)."),
) -> None:
    """Replay FEED with your ORDERS in it: each instruction reaches the book after its latency,
    joins the back of the queue at its price (shares ahead = the feed's visible shares then),
    moves up as orders ahead leave and fills when the feed trades at its level; crossing
    orders take the visible liquidity. Writes your fills, events (with the shares ahead),
    a summary per order, and the bbo (and depth) with and without your orders. A feed record
    that cannot be read stops the run: with --output, the tables of the records before it are
    written as TABLE.TYPE.partial. Without a feed table in --tables only the books of your
    instruments are replayed, so a fault in another book's records can pass unnoticed."""
    from ..engine.tables import TABLES as FEED_TABLES
    from ..errors import FeedError, ObookError
    from ..output import holding_output_dir, output_folder, write_files
    from ..simulation import OWN_TABLES, TABLES, simulated
    from ..simulation.prepare import parse_latency
    from .partial import check_outside_inputs, deliver_partial, drop_earlier_tables, drop_partial, marked
    from .progress import file_progress
    from .stdout import table_to_stdout

    if tables is None:
        names = ["fills", "events", "summary", "bbo_with_own", "bbo"] if out else ["fills"]
    else:
        names = list(dict.fromkeys(t.strip() for t in tables.split(",") if t.strip()))
        bad = [t for t in names if t not in TABLES and t not in FEED_TABLES]
        if not names:
            raise ObookError(f"--tables {tables!r} names no table; choose from {', '.join(TABLES + FEED_TABLES)}")
        if bad:
            raise ObookError(f"unknown table(s) {', '.join(bad)}; choose from "
                             f"{', '.join(TABLES + FEED_TABLES)}")
    from .options import given

    if out is None and given(ctx, "out_type"):      # stdout gets one table as CSV only
        raise ObookError("--type only applies to the tables of --output; give -o FOLDER (without it one table "
                         "goes to stdout as CSV)")
    if out is None and len(names) != 1:
        raise ObookError(f"stdout takes one table, not {len(names)} ({', '.join(names)}): name one with --tables "
                         "or write them to a folder with --output")
    from ..checks import check_seed
    from ..simulation.source import feed_source

    check_seed(seed, "--seed")

    source = feed_source(str(feed))         # a glob pattern: its files, sorted, as one feed
    from ..feeds.sources import source_paths

    check_outside_inputs(out, names, out_type.value, [*source_paths(source), orders])
    try:
        with file_progress(source) as progress:
            r = simulated(dict(feed=source, orders=str(orders), latency=parse_latency(latency, "--latency"),
                               seed=seed, horizon=horizon, workers=workers, format=format, day_end=not no_day_end,
                               levels=levels, on_error=on_error.value, date=date,
                               feed_tables=tuple(t for t in names if t in FEED_TABLES),
                               own_tables=tuple(t for t in names if t in OWN_TABLES), progress=progress),
                          "--latency")
    except FeedError as e:       # a bad feed record: the tables before it, as TABLE.TYPE.partial
        deliver_partial(e, names, out, out_type.value)
        raise
    if out is None:
        table_to_stdout(r.table(names[0]))
        return
    with output_folder(out), holding_output_dir(out):      # (another run's tables: not beside these)
        write_files([(marked(r.reader(t), "simulate") if t in FEED_TABLES else r.reader(t),    # all or none
                      out / f"{t}.{out_type.value}") for t in names])
        drop_earlier_tables(out, {f"{t}.{out_type.value}" for t in names}, _MARKS, [k.value for k in OutType])
        drop_partial(out, names, out_type.value)
    from .stdout import written

    typer.echo(written(r, names, out), err=True)


#: each table as an earlier run left it (``drop_earlier_tables``): its schema's ``obook.table``,
#: its CSV header's first columns and further columns, the last one only its header has; the
#: feed's own tables, which convert and table write too, also by ``obook.run`` (``marked``)
_MARKS = {
    **{t: ((tag,), ("seq", "time"), ("instrument", mark)) for t, tag, mark in (
        ("fills", "sim_fills", "liquidity"), ("events", "sim_events", "shares_ahead"),
        ("bbo_with_own", "bbo_with_own", "bid_px"), ("depth_with_own", "depth_with_own", "bid_px_1"))},
    "summary": (("sim_summary",), ("instrument", "order_id"), ("fill_ratio",)),
    **{t: ((t,), ("seq", "time"), ("ticker", mark), "simulate") for t, mark in (
        ("bbo", "bid_px"), ("trades", "kind"), ("orders", "queue_orders_ahead"), ("depth", "bid_px_1"))},
}

