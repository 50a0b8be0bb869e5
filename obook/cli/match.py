"""``obook match``: run order-entry instructions through the matching engine."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer


class Stp(str, Enum):
    none = "none"
    cancel_resting = "cancel_resting"
    cancel_incoming = "cancel_incoming"


class OutType(str, Enum):
    parquet = "parquet"
    csv = "csv"
    arrow = "arrow"


def match(
    ctx: typer.Context,
    orders: Path = typer.Argument(..., help="Order entry: CSV, Parquet or Arrow IPC (columns: time, instrument, "
                                            "order_id, action, side, type, tif, price, quantity, owner)."),
    out: Optional[Path] = typer.Option(None, "--output", "-o",
                                       help="Write every table to this folder (fills, events, bbo [, depth]; "
                                            "the tables an earlier run left there that this one does not write "
                                            "are removed); default: the fills as CSV on stdout."),
    out_type: OutType = typer.Option(OutType.parquet, "--type", help="File type of the tables in --output."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", min=1, max=64,
                                          help="Processes the instruments are sharded over (default: one per core, "
                                               "at most 8; 1 for a small file; same output for any number)."),
    tick: int = typer.Option(1, "--tick", min=1, help="Prices must be multiples of this."),
    stp: Stp = typer.Option(Stp.none, "--stp", help="Self-trade prevention between orders of one owner."),
    instruments: Optional[str] = typer.Option(None, "--instruments",
                                              help="Comma-separated known instruments (others are rejected)."),
    levels: int = typer.Option(0, "--depth", min=0, max=50, help="Also write the depth table, this many levels a side."),
    no_day_end: bool = typer.Option(False, "--no-day-end", help="Do not expire DAY orders after the last row."),
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help="Session date: `time` is ns since midnight New York and the tables get "
                                            "a `timestamp` (UTC) [default: a date in the file name, YYYY-MM-DD or "
                                            "YYYYMMDD, as `obook gen orders --date` writes it]."),
) -> None:
    """Match ORDERS with price-time priority (limit / market; GTC, DAY, IOC, FOK; modify,
    cancel) and write fills, events (accepted, rejected with a reason, rested, filled,
    cancelled, expired ...) and bbo rows. A row that cannot be read stops the run: the
    tables of the rows before it go to stdout (the fills) or, with --output, are written as
    TABLE.TYPE.partial."""
    from ..engine.cores import default_workers
    from ..errors import FeedError, ObookError
    from ..matching import match as run
    from ..output import holding_output_dir, output_folder, write_files

    tables = ("fills", "events", "bbo") + (("depth",) if levels else ())
    if out is None:
        from .options import given as on_command_line

        given = [flag for flag, used in (("--depth", levels), ("--type", on_command_line(ctx, "out_type"))) if used]
        if given:       # stdout gets the fills as CSV only: these would do nothing
            raise ObookError(f"{' and '.join(given)} only {'apply' if len(given) > 1 else 'applies'} to the "
                             "tables of --output; give -o FOLDER (without it the fills go to stdout as CSV)")
        tables = ("fills",)
    from ..feeds import named_date

    known = None
    if instruments is not None:
        known = [name.strip() for name in instruments.split(",") if name.strip()]
        if not known:
            raise ObookError(f"--instruments {instruments!r} names no instrument")
    day = date if date is not None else named_date(orders)
    if date is None and day is not None:
        from ..session import check_day

        check_day(day, f"{orders}: the date in its name")
    from .partial import check_outside_inputs, deliver_partial, drop_earlier_tables, drop_partial

    check_outside_inputs(out, tables, out_type.value, [orders])
    try:
        r = run(orders, workers=workers or default_workers(str(orders)), tick=tick, stp=stp.value, tables=tables,
                levels=max(levels, 1), instruments=known, day_end=not no_day_end, date=day)
    except FeedError as e:       # a row that cannot be read: the tables before it, as TABLE.TYPE.partial
        deliver_partial(e, list(tables), out, out_type.value)
        raise
    if out is None:
        from .stdout import table_to_stdout

        table_to_stdout(r.fills)
        return
    largest = sorted(tables, key=lambda t: -r.table(t).nbytes)
    with output_folder(out), holding_output_dir(out):      # (another run's tables: not beside these)
        write_files([(r.reader(t), out / f"{t}.{out_type.value}") for t in largest], threads=2)     # all or none
        drop_earlier_tables(out, {f"{t}.{out_type.value}" for t in tables}, _MARKS, [k.value for k in OutType])
        drop_partial(out, list(tables), out_type.value)
    from .stdout import written

    typer.echo(written(r, tables, out), err=True)


#: each table as an earlier run left it (``drop_earlier_tables``): its schema's ``obook.table``,
#: its CSV header's first columns and further columns, the last one only its header has
_MARKS = {t: ((tag,), ("seq", "time"), ("instrument", mark)) for t, tag, mark in
          (("fills", "fills", "taker_order_id"), ("events", "events", "event"), ("bbo", "match_bbo", "bid_px"),
           ("depth", "match_depth", "bid_px_1"))}
