"""``obook simulate``: your own orders inside a replayed feed (queue position, fills, latency)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer


class OutType(str, Enum):
    parquet = "parquet"
    csv = "csv"
    arrow = "arrow"


def simulate(
    feed: Path = typer.Argument(..., help="The feed (any order-level format: ITCH, CSV, Databento MBO, "
                                          "Shenzhen / Shanghai Level-2)."),
    orders: Path = typer.Argument(..., help="Your orders: CSV, Parquet or Arrow IPC (columns: time, instrument, "
                                            "order_id, action, side, type, tif, price, quantity; time in the "
                                            "feed's unit, instrument = the feed's ticker)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o",
                                       help="Write fills, events, summary, bbo_with_own and bbo to this folder; "
                                            "default: the fills as CSV on stdout."),
    out_type: OutType = typer.Option(OutType.parquet, "--type", help="File type of the tables in --out."),
    latency: Optional[str] = typer.Option(
        None, "--latency",
        help="ns from decision to book: an integer, a column of ORDERS, or a distribution "
             "uniform:LO:HI, exponential:MEAN, normal:MEAN:SD, lognormal:MU:SIGMA (with --seed)."),
    seed: int = typer.Option(0, "--seed", help="Seed of a latency distribution."),
    horizon: float = typer.Option(1.0, "--horizon", min=0, help="Seconds after arrival of the summary's later mid."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", min=1, max=64,
                                          help="Worker processes (default: one per core, at most 8)."),
    format: Optional[str] = typer.Option(None, "--format", "-f", help="Feed format (default: detected)."),
    no_day_end: bool = typer.Option(False, "--no-day-end", help="Do not expire DAY orders after the feed's end."),
) -> None:
    """Replay FEED with your ORDERS in it: each instruction reaches the book after its latency,
    joins the back of the queue at its price (shares ahead = the feed's visible shares then),
    moves up as orders ahead leave and fills when the feed trades at its level; crossing
    orders take the visible liquidity. Writes your fills, events (with the shares ahead),
    a summary per order, and the bbo with and without your orders."""
    from ..simulation import simulate as run
    from ..output import write_file

    from ..simulation.prepare import parse_latency

    r = run(str(feed), str(orders), latency=parse_latency(latency), seed=seed, horizon=horizon, workers=workers,
            format=format, day_end=not no_day_end, feed_tables=("bbo",) if out else ())
    if out is None:
        import pyarrow.csv as pcsv
        try:
            pcsv.write_csv(r.fills, sys.stdout.buffer)
        except BrokenPipeError:
            raise typer.Exit(0)
        return
    out.mkdir(parents=True, exist_ok=True)
    for t in r.names:
        write_file(r.reader(t), out / f"{t}.{out_type.value}")
    typer.echo(", ".join(f"{t}: {r.table(t).num_rows:,} rows" for t in r.names) + f" -> {out}", err=True)
